// SPDX-License-Identifier: GPL-2.0-or-later
// `batch --apply-to DIR` and `schedule --apply`: every image's plan carried out into its own
// new disk, recorded per image (a refused apply as that image's failure), outputs never
// overwritten, TSK reading the outputs as the inputs; the schema-4 upgrade.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/batch/batch.hpp"
#include "app/batch/image_list.hpp"
#include "app/batch/sqlite.hpp"
#include "core/io/rate_limiter.hpp"
#include "support/batch_results.hpp"
#include "support/fixtures.hpp"
#include "support/ntfs_edit.hpp"
#include "support/tsk_oracle.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

/// A bare NTFS volume of 32 MiB with 300 files, as apply_test.cpp generates them.
fs::path bare_volume(std::uint32_t seed) {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = "none";
    o.files = 300;
    o.seed = seed;
    return test::generated_image("batch-apply-" + std::to_string(seed), o);
}

}  // namespace

TEST_CASE(
    "batch --apply-to applies each image's plan into its own disk and records it, and a refused apply as "
    "that image's failure",
    "[batch][apply]") {
    test::require_tools({"icat", "fls"});
    const test::WorkDir work("batch-apply");
    // Two images of the same name in two directories, and one whose $LogFile is unclean:
    // the analysis reads it, the apply refuses it.
    const fs::path store = work / "images";
    fs::create_directories(store / "a");
    fs::create_directories(store / "b");
    fs::copy_file(bare_volume(51), store / "a" / "vm.img");
    fs::copy_file(bare_volume(52), store / "b" / "vm.img");
    fs::copy_file(bare_volume(51), store / "unclean.img");
    test::mark_logfile_unclean(store / "unclean.img");
    const std::vector<std::string> images = batch::expand_images({store.string()}, std::nullopt);
    REQUIRE(images.size() == 3);
    std::map<std::string, std::uint64_t> fingerprints;
    for (const std::string& image : images) fingerprints[image] = test::file_fingerprint(image);

    const fs::path applied = work / "applied";
    const fs::path db = work / "results.sqlite";
    const std::vector<std::string> command{"batch",      store.string(),   "--db",  db.string(),
                                           "--apply-to", applied.string(), "--json"};
    const auto r = test::run_cli(command);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("1 of 3 images failed") != std::string::npos);
    const auto lines = test::batch_json_lines(r.out);
    REQUIRE(lines.size() == 3);

    // Distinct outputs for the two vm.img, named after the image; the unclean one has none.
    const auto outputs = batch::output_paths(images, applied.string(), "raw");
    const std::string first = (store / "a" / "vm.img").string();
    const std::string second = (store / "b" / "vm.img").string();
    const std::string unclean = (store / "unclean.img").string();
    REQUIRE(outputs.at(first) != outputs.at(second));
    CHECK(fs::path(outputs.at(unclean)).filename() == "unclean.raw");
    CHECK(test::files_in(applied) == std::set<std::string>{fs::path(outputs.at(first)).filename(),
                                                     fs::path(outputs.at(second)).filename()});

    for (const std::string& image : {first, second}) {
        INFO(image);
        const std::string output = outputs.at(image);
        CHECK(test::file_fingerprint(image) == fingerprints[image]);  // the input is only read
        const std::string of_image =
            " FROM images i JOIN applies a USING (image_id) JOIN volumes v USING (image_id) "
            "JOIN plans p USING (volume_id) WHERE i.path = ?";
        const auto value = [&](const std::string& column) {
            return test::db_integer(db, "SELECT " + column + of_image, image);
        };
        CHECK(value("i.status = 'ok' AND a.status = 'ok' AND a.error IS NULL") == 1);
        CHECK(value("a.output = '" + output + "' AND a.output_format = 'raw'") == 1);
        CHECK(value("a.partition = v.partition") == 1);
        const std::int64_t planned = value("p.moves");
        const std::int64_t done = value("a.moves_done");
        const std::int64_t skipped = value("a.moves_skipped");
        CHECK(value("a.moves_planned") == planned);
        CHECK(done + skipped == planned);
        CHECK(done > 0);
        CHECK(test::db_integer(db,
                      "SELECT coalesce(sum(s.moves), 0) FROM images i JOIN apply_skips s USING (image_id) "
                      "WHERE i.path = ?",
                      image) == skipped);
        CHECK(value("a.output_file_bytes") == static_cast<std::int64_t>(fs::file_size(output)));
        CHECK(fs::file_size(output) == fs::file_size(image));
        CHECK(value("a.disk_bytes_written") > 0);
        CHECK(value("a.bytes_moved") > 0);
        CHECK(value("a.verified") == 1);
        CHECK(value("a.streams_hashed") > 100);
        CHECK(value("a.fragments_before") == value("p.fragments_before"));
        CHECK(value("a.fragments_after") == value("a.fragments_predicted"));
        CHECK(value("a.fragments_after") < value("a.fragments_before"));
        if (skipped == 0) CHECK(value("a.fragments_after") == value("p.fragments_after"));
        // The JSON line says the same.
        const Json& apply = lines.at(image)["apply"];
        CHECK(apply["status"] == "ok");
        CHECK(apply["output"] == output);
        CHECK(apply["moves"]["done"] == done);
        CHECK(apply["bytes_written"]["moved"] == value("a.bytes_moved"));
        CHECK(apply["verification"]["fragments_after"] == value("a.fragments_after"));

        // The Sleuth Kit reads every file the moves touched as the input holds it.
        std::string plan_json;
        {
            batch::Database d(db.string(), false);
            batch::Statement s(d, "SELECT p.plan_json" + of_image);
            s.bind(1, image);
            REQUIRE(s.step());
            plan_json = s.text(0);
        }
        std::set<std::string> moved;
        const Json plan = Json::parse(plan_json);
        for (const Json& m : plan["moves"])
            moved.insert(std::to_string(m["mft_record"].get<std::uint64_t>()));
        const auto in = test::tsk_files(image, 0);
        const auto listed_out = test::tsk_files(output, 0);
        CHECK(listed_out == in);
        const auto contents_in = test::tsk_contents(image, 0, in);
        const auto contents_out = test::tsk_contents(output, 0, listed_out);
        std::size_t compared = 0;
        for (const auto& [path, address] : in) {
            if (moved.count(address.substr(0, address.find('-'))) == 0 || path == "$MFT" || path == "$Bitmap")
                continue;
            INFO(path);
            CHECK(contents_out.at(path) == contents_in.at(path));
            ++compared;
        }
        CHECK(compared > 10);
    }

    // The refused image: failed with the apply's one-line reason, its analysis kept, no output.
    CHECK(test::file_fingerprint(unclean) == fingerprints[unclean]);
    const std::string reason = lines.at(unclean)["apply"]["error"];
    CHECK(reason.rfind("$LogFile says the volume was not shut down cleanly", 0) == 0);
    CHECK(lines.at(unclean)["status"] == "failed");
    CHECK(lines.at(unclean)["error"] == "apply: " + reason);
    CHECK(test::db_integer(db,
                  "SELECT count(*) FROM images WHERE path = ? AND status = 'failed' AND error = 'apply: " +
                      reason + "'",
                  unclean) == 1);
    CHECK(test::db_integer(db,
                  "SELECT count(*) FROM images i JOIN applies a USING (image_id) WHERE i.path = ? AND "
                  "a.status = 'failed' AND a.error = '" +
                      reason + "' AND a.moves_done IS NULL AND a.verified IS NULL",
                  unclean) == 1);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images i JOIN volumes v USING (image_id) WHERE i.path = ?",
                  unclean) == 1);
    CHECK(!fs::exists(outputs.at(unclean)));

    SECTION("an existing output is never overwritten") {
        std::map<std::string, std::uint64_t> before;
        for (const std::string& image : {first, second})
            before[image] = test::file_fingerprint(outputs.at(image));
        std::vector<std::string> again = command;
        again.push_back("--force");
        const auto forced = test::run_cli(again);
        CHECK(forced.status == 2);
        CHECK(forced.err.find("3 of 3 images failed") != std::string::npos);
        const auto forced_lines = test::batch_json_lines(forced.out);
        for (const std::string& image : {first, second}) {
            INFO(image);
            CHECK(forced_lines.at(image)["error"] ==
                  "apply: the output " + outputs.at(image) + " exists (it is not replaced)");
            CHECK(test::file_fingerprint(outputs.at(image)) == before[image]);
        }
        CHECK(test::files_in(applied).size() == 2);  // no temporary file left either
    }
}

TEST_CASE("apply outputs: named after the image, distinct when names collide, outside the batch",
          "[batch][apply]") {
    const auto named =
        batch::output_paths({"/vm/a/web.vmdk", "/vm/b/web.vhdx", "/vm/db.img"}, "/out", "qcow2");
    const auto hash = [](const std::string& path) {
        char text[9];
        std::snprintf(text, sizeof text, "%08x", static_cast<unsigned>(batch::path_hash(path) & 0xffffffffu));
        return std::string(text);
    };
    CHECK(named.at("/vm/db.img") == "/out/db.qcow2");
    CHECK(named.at("/vm/a/web.vmdk") == "/out/web-" + hash("/vm/a/web.vmdk") + ".qcow2");
    CHECK(named.at("/vm/b/web.vhdx") == "/out/web-" + hash("/vm/b/web.vhdx") + ".qcow2");
    CHECK(named.at("/vm/a/web.vmdk") != named.at("/vm/b/web.vhdx"));
    // A name depends on the list, not on the order or on other shards' share of it.
    CHECK(batch::output_paths({"/vm/db.img", "/vm/b/web.vhdx", "/vm/a/web.vmdk"}, "/out", "qcow2") == named);

    const test::WorkDir work("batch-apply-inside");
    fs::create_directories(work / "out");
    CHECK(batch::is_inside((work / "out" / "x.raw").string(), (work / "out").string()));
    CHECK(batch::is_inside((work / "out" / "sub" / ".." / "x.raw").string(), (work / "out").string()));
    CHECK_FALSE(batch::is_inside((work / "x.raw").string(), (work / "out").string()));
    CHECK_FALSE(batch::is_inside((work / "outer" / "x.raw").string(), (work / "out").string()));
    CHECK_FALSE(batch::is_inside((work / "out").string(), (work / "out").string()));
}

TEST_CASE("a schema-3 results database is upgraded in place, keeps its rows and records applies",
          "[batch][apply][schema]") {
    const test::WorkDir work("batch-apply-schema");
    const fs::path image = work / "vm.img";
    fs::copy_file(bare_volume(51), image);
    const fs::path db = work / "old.sqlite";
    REQUIRE(test::run_cli({"batch", image.string(), "--db", db.string(), "--plan"}).status == 0);
    {
        // What schema 3 wrote: everything but the apply and compaction tables, the copy columns
        // and the plan IO.
        batch::Database d(db.string(), false);
        d.exec("DROP TABLE apply_skips");
        d.exec("DROP TABLE applies");
        d.exec("DROP TABLE compactions");
        for (const char* column : {"copy_commands_4m", "copy_commands_16m"})
            d.exec(std::string("ALTER TABLE images DROP COLUMN ") + column);
        test::drop_columns_after(d, 3);
        d.exec("PRAGMA user_version = 3");
    }
    const std::int64_t plans = test::db_integer(db, "SELECT count(*) FROM plans");
    REQUIRE(plans == 1);
    { const batch::ResultsDb upgraded(db.string(), false); }
    CHECK(test::db_integer(db, "PRAGMA user_version") == batch::kSchemaVersion);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images WHERE status = 'ok'") == 1);
    CHECK(test::db_integer(db, "SELECT count(*) FROM plans") == plans);
    CHECK(test::db_integer(db, "SELECT count(*) FROM applies") == 0);

    const fs::path applied = work / "applied";
    const auto r = test::run_cli({"batch", image.string(), "--db", db.string(), "--force", "--apply-to",
                                  applied.string(), "--output-format", "qcow2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images") == 2);
    CHECK(test::db_integer(db,
                  "SELECT count(*) FROM applies a JOIN images i USING (image_id) WHERE i.image_id = 2 AND "
                  "a.status = 'ok' AND a.output_format = 'qcow2' AND a.verified = 1") == 1);
    CHECK(fs::exists(applied / "vm.qcow2"));
    CHECK(test::db_integer(db, "SELECT count(*) FROM applies WHERE image_id = 1") == 0);
}

TEST_CASE("schedule --apply carries the plan out through apply, each move in its batch",
          "[schedule][apply]") {
    const test::WorkDir work("schedule-apply");
    const fs::path plan = work / "p.json";
    REQUIRE(test::run_cli({"plan", bare_volume(51).string(), "--strategy", "defrag", "-o", plan.string()})
                .status == 0);
    const fs::path out = work / "out.img";
    // A start in the past and no windows: every move may start at once (no waiting here).
    const auto r =
        test::run_cli({"schedule", plan.string(), "--rate", "1GiB/s", "--start", "2020-01-01T00:00Z",
                       "--apply", bare_volume(51).string(), "-o", out.string(), "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    CHECK(doc["schema"] == "guestfrag.schedule.v1");
    CHECK(doc["batches"].size() == 1);
    const Json& apply = doc["apply"];
    CHECK(apply["schema"] == "guestfrag.apply.v1");
    CHECK(apply["moves"]["planned"] == doc["moves"]);
    CHECK(apply["moves"]["done"].get<std::size_t>() + apply["moves"]["skipped"].get<std::size_t>() ==
          doc["moves"].get<std::size_t>());
    CHECK(apply["verification"]["passed"] == true);
    CHECK(apply["bytes_written"]["file"] == fs::file_size(out));

    // Usage: --apply needs -o, and goes with the table or --json, not --ics.
    CHECK(test::run_cli({"schedule", plan.string(), "--rate", "1MiB/s", "--apply", bare_volume(51).string()})
              .status == 1);
    CHECK(test::run_cli({"schedule", plan.string(), "--rate", "1MiB/s", "--apply", bare_volume(51).string(),
                         "-o", (work / "x.img").string(), "--ics"})
              .status == 1);
    CHECK(!fs::exists(work / "x.img"));
}

TEST_CASE("an image's apply takes every byte it copies from the batch's one rate budget", "[batch][apply][rate]") {
    const test::WorkDir work("batch-apply-budget");
    const fs::path image = work / "vm.img";
    fs::copy_file(bare_volume(52), image);
    batch::JobOptions options;
    options.plan = true;
    // Unlimited, so that nothing waits; requested() still counts every byte asked for.
    RateLimiter analysis_only(0);
    const batch::ImageResult analysed = batch::run_image_job(image.string(), options, analysis_only, {});
    REQUIRE(analysed.ok);
    CHECK(analysis_only.requested() == analysed.bytes_read);

    options.apply = batch::JobOptions::Apply{{{image.string(), (work / "out.raw").string()}}};
    RateLimiter budget(0);
    const batch::ImageResult applied = batch::run_image_job(image.string(), options, budget, {});
    INFO(applied.error);
    REQUIRE(applied.ok);
    REQUIRE(applied.apply);
    CHECK(applied.apply->ok);
    CHECK(applied.apply->bytes_moved > 0);
    // The analysis's reads, then the disk copy's (at least the data it wrote) and the moves'.
    CHECK(budget.requested() >=
          applied.bytes_read + applied.apply->disk_bytes_written + applied.apply->bytes_moved);
    CHECK(fs::exists(work / "out.raw"));
}
