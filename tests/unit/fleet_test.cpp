// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag fleet`: every image a batch recorded, its figures equal to analyze's, ranked,
// grouped by datastore and host, with its trend over the runs; CSV and usage errors.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/batch_results.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

TEST_CASE("fleet ranks every image by what is at stake and groups them by datastore and host",
          "[batch][fleet]") {
    const test::Scratch store{test::make_datastore("fleet")};
    const std::string db = (store.dir / "fleet.sqlite").string();
    REQUIRE(test::run_cli({"batch", store.dir.string(), "--db", db, "--plan"}).status == 2);  // broken.img
    // A second analysis of one image: its trend counts two.
    const std::string again = (store.dir / "vm42.img").string();
    REQUIRE(test::run_cli({"batch", again, "--db", db, "--force"}).status == 0);

    const auto r = test::run_cli({"fleet", "--db", db, "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json fleet = Json::parse(r.out);
    CHECK(fleet["schema"] == "guestfrag.fleet.v1");
    CHECK(fleet["rank"] == "fragmentation");
    const Json& images = fleet["images"];
    REQUIRE(images.size() == 4);
    REQUIRE(fleet["failed"].size() == 1);
    CHECK(fleet["failed"][0]["path"] == (store.dir / "broken.img").string());
    CHECK(fleet["failed"][0]["error"] == "no partition table and no NTFS file system found");

    char host[256] = {};
    REQUIRE(::gethostname(host, sizeof host) == 0);
    const auto df = test::run({"df", "--output=target", store.dir.string()});
    REQUIRE(df.status == 0);
    std::istringstream df_lines(df.out);
    std::string mount;
    std::getline(df_lines, mount);  // "Mounted on"
    std::getline(df_lines, mount);

    std::uint64_t reclaimable_total = 0;
    for (std::size_t k = 0; k < images.size(); ++k) {
        const Json& i = images[k];
        INFO(i["path"]);
        // The oracle: analyze of the image, volume by volume.
        const auto analysis = test::run_cli({"analyze", i["path"].get<std::string>(), "--json"});
        REQUIRE(analysis.status == 0);
        const Json a = Json::parse(analysis.out);
        double worst = 0;
        std::uint64_t excess = 0, reclaimable = 0;
        for (const Json& v : a["volumes"]) {
            worst = std::max(worst, v["files"]["fragmentation_percent"].get<double>());
            excess += v["files"]["excess_fragments"].get<std::uint64_t>();
            reclaimable += v["layers"][0]["reclaimable_bytes"].get<std::uint64_t>();
        }
        CHECK(i["volumes"] == a["volumes"].size());
        CHECK(i["fragmentation_percent"].get<double>() == Approx(worst));
        CHECK(i["excess_fragments"] == excess);
        CHECK(i["reclaimable_bytes"] == reclaimable);
        reclaimable_total += reclaimable;
        for (const Json& f : a["image"]["copy"]["chain"]["offload"])
            if (f["transfer_size"] == 4u << 20) {
                CHECK(i["copy_commands_4m"] == f["now"]["commands"]);
                CHECK(i["copy_relaid_commands_4m"] == f["relaid"]["commands"]);
            }
        CHECK(i["host"] == host);
        CHECK(i["datastore"] == mount);
        // The plan's growth, summed over the image's volumes (the second run of vm42 did not plan).
        if (i["path"] == again)
            CHECK(i["thin_growth_bytes"].is_null());
        else
            CHECK(i["thin_growth_bytes"] ==
                  test::db_integer(
                      db,
                      "SELECT sum(p.thin_growth_bytes) FROM plans p JOIN volumes v USING (volume_id) "
                      "JOIN images im USING (image_id) WHERE im.path = ?",
                      i["path"].get<std::string>()));
        CHECK(i["trend"]["analyses"] == (i["path"] == again ? 2 : 1));
        CHECK(i["trend"]["change_percent_points"].get<double>() ==
              Approx(i["fragmentation_percent"].get<double>() -
                     i["trend"]["first_fragmentation_percent"].get<double>()));
        // Ranked by fragmentation, highest first.
        if (k > 0) CHECK(images[k - 1]["fragmentation_percent"] >= i["fragmentation_percent"]);
    }
    REQUIRE(fleet["datastores"].size() == 1);
    CHECK(fleet["datastores"][0]["name"] == mount);
    CHECK(fleet["datastores"][0]["images"] == 4);
    CHECK(fleet["datastores"][0]["reclaimable_bytes"] == reclaimable_total);
    REQUIRE(fleet["hosts"].size() == 1);
    CHECK(fleet["hosts"][0]["name"] == host);

    // Another rank reorders; CSV holds every image with a header; the text lists the top.
    const Json by_bytes =
        Json::parse(test::run_cli({"fleet", "--db", db, "--json", "--rank", "reclaimable"}).out);
    for (std::size_t k = 1; k < by_bytes["images"].size(); ++k)
        CHECK(by_bytes["images"][k - 1]["reclaimable_bytes"] >= by_bytes["images"][k]["reclaimable_bytes"]);
    const auto csv = test::run_cli({"fleet", "--db", db, "--csv"});
    REQUIRE(csv.status == 0);
    CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == 5);
    CHECK(csv.out.starts_with("rank,path,host,datastore,"));
    CHECK(csv.out.find("\n1," + images[0]["path"].get<std::string>() + ",") != std::string::npos);
    const auto text = test::run_cli({"fleet", "--db", db, "--top", "2"});
    REQUIRE(text.status == 0);
    CHECK(text.out.starts_with("4 images, ranked by fragmentation (the first 2)\n"));
    CHECK(text.out.find("1 images whose newest analysis failed:") != std::string::npos);

    // Usage errors and a missing database.
    CHECK(test::run_cli({"fleet", "--db", db, "--json", "--csv"}).status == 1);
    CHECK(test::run_cli({"fleet", "--db", db, "--rank", "size"}).status == 1);
    const auto missing = test::run_cli({"fleet", "--db", (store.dir / "none.sqlite").string()});
    CHECK(missing.status == 2);
    CHECK(missing.err.find('\n') == missing.err.size() - 1);
}

TEST_CASE("batch --verdict records report's verdict per volume and fleet --rank gain ranks by it",
          "[batch][fleet][verdict]") {
    const test::Scratch store{test::scratch_dir() / ("fleet-gain." + std::to_string(::getpid()))};
    fs::create_directories(store.dir);
    // A fragmented disk the verdict defragments, a small one, and one with nothing worth doing.
    fs::copy_file(test::fragmented_256_image(), store.dir / "fragmented.img");
    fs::copy_file(test::small_cli_image(), store.dir / "small.img");
    MkImageOptions o;
    o.disk_size = 40ull << 20;
    o.files = 150;
    o.seed = 41;
    fs::copy_file(test::generated_image("batch-41", o), store.dir / "quiet.img");
    const std::string db = (store.dir / "gain.sqlite").string();
    const auto batch = test::run_cli({"batch", store.dir.string(), "--db", db, "--verdict", "--json"});
    INFO(batch.err);
    REQUIRE(batch.status == 0);
    const auto lines = test::batch_json_lines(batch.out);

    // The oracle: report's verdict on each image (the same rule, defaults and models).
    for (const auto& [path, line] : lines) {
        INFO(path);
        const auto report = test::run_cli({"report", path, "--json"});
        REQUIRE(report.status == 0);
        const Json r = Json::parse(report.out)["volumes"][0]["verdict"];
        const Json& got = line["volumes"][0]["verdict"];
        CHECK(got["device"] == "array");
        CHECK(got["workload"] == "scan");
        CHECK(got["now_seconds"].get<double>() == Approx(r["now_seconds"].get<double>()));
        CHECK(got["reason"] == r["reason"]);
        if (r["chosen"].is_null()) {
            CHECK(got["strategy"].is_null());
            CHECK(test::db_integer(db,
                                   "SELECT count(*) FROM verdicts d JOIN volumes v USING (volume_id) "
                                   "JOIN images i USING (image_id) WHERE i.path = ? AND d.strategy IS NULL",
                                   path) == 1);
            continue;
        }
        const Json& chosen = r["plans"][r["chosen"].get<std::size_t>()];
        CHECK(got["strategy"] == chosen["strategy"]);
        CHECK(got["order"] == chosen["order"]);
        CHECK(got["seconds_saved"].get<double>() == Approx(chosen["seconds_saved"]["array"].get<double>()));
        CHECK(got["plan_io_seconds"].get<double>() ==
              Approx(chosen["plan_io_seconds"]["array"].get<double>()));
        CHECK(got["storage_work_seconds"].get<double>() ==
              Approx(chosen["storage_work_seconds"]["array"].get<double>()));
        CHECK(got["storage_work_seconds"].get<double>() > got["plan_io_seconds"].get<double>());
        CHECK(got["moved_bytes"] == chosen["moved_bytes"]);
        CHECK(test::db_integer(db,
                               "SELECT moved_bytes FROM verdicts d JOIN volumes v USING (volume_id) "
                               "JOIN images i USING (image_id) WHERE i.path = ?",
                               path) == chosen["moved_bytes"].get<std::int64_t>());
    }
    CHECK_FALSE(
        lines.at((store.dir / "fragmented.img").string())["volumes"][0]["verdict"]["strategy"].is_null());
    CHECK(lines.at((store.dir / "quiet.img").string())["volumes"][0]["verdict"]["strategy"].is_null());

    // Ranked by seconds saved a run per second of the storage work the plan causes (the
    // rule's, docs/verdict.md §2); no action after.
    const Json fleet = Json::parse(test::run_cli({"fleet", "--db", db, "--json", "--rank", "gain"}).out);
    CHECK(fleet["rank"] == "gain");
    const Json& images = fleet["images"];
    REQUIRE(images.size() == 3);
    const auto key = [](const Json& i) {
        const Json& v = i["verdict"];
        return v["recommended_volumes"] == 0
                   ? -1.0
                   : v["seconds_saved"].get<double>() / v["storage_work_seconds"].get<double>();
    };
    for (std::size_t k = 1; k < images.size(); ++k) CHECK(key(images[k - 1]) >= key(images[k]));
    CHECK(images[0]["path"] == (store.dir / "fragmented.img").string());
    CHECK(images[0]["verdict"]["recommended_volumes"] == 1);
    CHECK(key(images[0]) > 0);
    const Json& last = images[2];
    CHECK(last["verdict"]["weighed_volumes"] == 1);
    CHECK(last["verdict"]["seconds_saved"].is_null());
    const auto text = test::run_cli({"fleet", "--db", db, "--rank", "gain"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("saves / work") != std::string::npos);
    CHECK(text.out.find("no action") != std::string::npos);
    CHECK(text.out.find(" s a run / ") != std::string::npos);

    // merge carries the verdicts over with their volumes.
    const std::string merged = (store.dir / "merged.sqlite").string();
    REQUIRE(test::run_cli({"merge", merged, db}).status == 0);
    CHECK(test::db_integer(merged, "SELECT count(*) FROM verdicts d JOIN volumes v USING (volume_id)") == 3);
    CHECK(Json::parse(test::run_cli({"fleet", "--db", merged, "--json", "--rank", "gain"}).out)["images"] ==
          images);
}

TEST_CASE("batch --dedup-chunk records the verdict with the deduplicator's re-scan in its work",
          "[batch][fleet][verdict]") {
    const test::Scratch store{test::scratch_dir() / ("fleet-dedup." + std::to_string(::getpid()))};
    fs::create_directories(store.dir);
    const std::string image = (store.dir / "fragmented.img").string();
    fs::copy_file(test::fragmented_256_image(), image);
    const std::string db = (store.dir / "dedup.sqlite").string();
    // Naming the deduplication asks for the verdict.
    const auto batch = test::run_cli({"batch", image, "--db", db, "--dedup-chunk", "4K", "--json"});
    INFO(batch.err);
    REQUIRE(batch.status == 0);
    const Json got = test::batch_json_lines(batch.out).at(image)["volumes"][0]["verdict"];
    const Json r = Json::parse(
        test::run_cli({"report", image, "--dedup-chunk", "4K", "--json"}).out)["volumes"][0]["verdict"];
    REQUIRE_FALSE(r["chosen"].is_null());
    const Json& chosen = r["plans"][r["chosen"].get<std::size_t>()];
    CHECK(got["storage_work_seconds"].get<double>() ==
          Approx(chosen["storage_work_seconds"]["array"].get<double>()));
    CHECK(chosen["dedup_rescan_seconds"]["array"].get<double>() > 0);
    const Json fleet = Json::parse(test::run_cli({"fleet", "--db", db, "--json", "--rank", "gain"}).out);
    CHECK(fleet["images"][0]["verdict"]["storage_work_seconds"].get<double>() ==
          Approx(chosen["storage_work_seconds"]["array"].get<double>()));
    const auto bad = test::run_cli({"batch", image, "--db", db, "--dedup-chunk", "100K"});
    CHECK(bad.status == 1);
    CHECK(bad.err.find("--dedup-chunk: dedup chunk size 102400 is not a power of two") != std::string::npos);
}
