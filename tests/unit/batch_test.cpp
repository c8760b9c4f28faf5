// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag batch`, `history` and `merge`: rows for every image (failed ones with their
// error), figures equal to `analyze --json`, resume after an interrupt, the read-rate budget,
// and shards that merge into the unsharded result.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/batch/batch.hpp"
#include "app/batch/image_list.hpp"
#include "app/batch/sqlite.hpp"
#include "core/error.hpp"
#include "support/batch_results.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

using test::image_rows;
using test::make_datastore;
using test::Scratch;
using test::spawn_cli;
using test::wait_exit;
using test::wait_for_rows;

/// The offload commands `analyze --json` document `a` reports for a full copy at `transfer`
/// bytes: now, or of the data re-laid.
std::int64_t analyze_commands(const Json& a, std::uint64_t transfer, const char* state = "now") {
    for (const Json& f : a["image"]["copy"]["chain"]["offload"])
        if (f["transfer_size"] == transfer) return f[state]["commands"].get<std::int64_t>();
    FAIL("analyze reports no figures at transfer size " << transfer);
    return -1;
}

/// The newest row of `path` holds the copy commands analyze reports at 4 and 16 MiB, now and
/// re-laid, and the mount point of the image's file system.
void check_copy_columns(const fs::path& db, const std::string& path, const Json& a) {
    const std::string newest = " FROM images WHERE path = '" + path + "' ORDER BY image_id DESC LIMIT 1";
    const std::int64_t at4 = test::db_integer(db, "SELECT copy_commands_4m" + newest);
    CHECK(at4 > 0);
    CHECK(at4 == analyze_commands(a, 4ull << 20));
    CHECK(test::db_integer(db, "SELECT copy_commands_16m" + newest) == analyze_commands(a, 16ull << 20));
    CHECK(test::db_integer(db, "SELECT copy_relaid_commands_4m" + newest) == analyze_commands(a, 4ull << 20, "relaid"));
    CHECK(test::db_integer(db, "SELECT copy_relaid_commands_16m" + newest) ==
          analyze_commands(a, 16ull << 20, "relaid"));
    const auto df = test::run({"df", "--output=target", path});
    REQUIRE(df.status == 0);
    const std::string mount = df.out.substr(df.out.find('\n') + 1, df.out.find('\n', df.out.find('\n') + 1) -
                                                                     df.out.find('\n') - 1);
    CHECK(test::db_integer(db, "SELECT count(*)" + newest.substr(0, newest.find(" ORDER")) + " AND datastore = ?",
                           mount) >= 1);
}

}  // namespace

TEST_CASE("batch records every image, the corrupt one with its error, and equals analyze", "[batch]") {
    const Scratch store{make_datastore("batch-rows")};
    const fs::path& dir = store.dir;
    const fs::path db = dir / "results.sqlite";
    const auto r = test::run_cli({"batch", dir.string(), "--db", db.string(), "--jobs", "3", "--plan", "--json"});
    INFO(r.err);
    CHECK(r.status == 2);  // one image failed
    CHECK(r.err.find("1 of 5 images failed") != std::string::npos);

    // JSON lines: one object per image.
    std::map<std::string, Json> lines;
    std::istringstream out(r.out);
    for (std::string line; std::getline(out, line);) {
        const Json j = Json::parse(line);
        lines[j["path"]] = j;
    }
    CHECK(lines.size() == 5);  // notes.txt is not taken from a directory

    const auto rows = image_rows(db);
    REQUIRE(rows.size() == 5);
    for (const auto& [path, row] : rows) {
        INFO(path);
        const auto& [status, error, fragmentation] = row;
        if (fs::path(path).filename() == "broken.img") {
            CHECK(status == "failed");
            CHECK(error == "no partition table and no NTFS file system found");
            CHECK(lines[path]["status"] == "failed");
            continue;
        }
        CHECK(status == "ok");
        const auto analysis = test::run_cli({"analyze", path, "--json"});
        REQUIRE(analysis.status == 0);
        const Json a = Json::parse(analysis.out);
        CHECK(fragmentation == Approx(a["volumes"][0]["files"]["fragmentation_percent"].get<double>()));
        CHECK(lines[path]["volumes"][0]["fragmented_files"] == a["volumes"][0]["files"]["fragmented"]);
        // The image file's layout over the first volume, as analyze reports it.
        const Json& host = a["volumes"][0]["layers"][0]["host"];
        const std::string volume_metrics =
            " FROM images i JOIN volumes v USING (image_id) JOIN metrics m USING (volume_id) WHERE i.path = "
            "'" +
            path + "' ORDER BY v.partition LIMIT 1";
        CHECK(test::db_integer(db, "SELECT m.host_extents" + volume_metrics) == host["extents"].get<std::int64_t>());
        CHECK(test::db_integer(db, "SELECT m.host_seeks" + volume_metrics) == host["seeks"].get<std::int64_t>());
        CHECK(test::db_integer(db, "SELECT m.host_backward_seeks" + volume_metrics) ==
              host["backward_seeks"].get<std::int64_t>());
        // The copy figures of the whole image, as analyze reports them.
        check_copy_columns(db, path, a);
    }
    // --plan recorded one plan per volume with its JSON, and the plan replays on the image.
    CHECK(test::db_integer(db, "SELECT count(*) FROM plans") == 4);
    batch::Database d(db.string(), false);
    batch::Statement plan(d, "SELECT i.path, p.plan_json FROM plans p JOIN volumes v USING (volume_id) "
                             "JOIN images i USING (image_id) LIMIT 1");
    REQUIRE(plan.step());
    const fs::path plan_file = dir / "replay.json";
    std::ofstream(plan_file) << plan.text(1);
    CHECK(test::run_cli({"plan", plan.text(0), "--check", plan_file.string()}).status == 0);
}

TEST_CASE("an interrupted batch resumes without redoing finished images", "[batch]") {
    const Scratch store{make_datastore("batch-resume")};
    const fs::path& dir = store.dir;
    const fs::path db = dir / "results.sqlite";
    const std::vector<std::string> images = batch::expand_images({dir.string()}, std::nullopt);
    REQUIRE(images.size() == 5);
    {
        batch::ResultsDb results(db.string(), true);
        const std::int64_t run = results.begin_run("test", "");
        std::stop_source stop;
        batch::BatchOptions options;
        options.jobs = 1;
        // Stop as soon as the second image is stored: the batch must end there.
        const batch::BatchSummary s = batch::run_batch(results, run, images, options, stop.get_token(),
                                                       [&](const batch::BatchEvent& e) {
                                                           if (e.finished == 2) stop.request_stop();
                                                       });
        results.end_run(run, s.interrupted);
        CHECK(s.interrupted);
        CHECK(s.analysed == 2);
    }
    CHECK(test::db_integer(db, "SELECT count(*) FROM images") == 2);
    CHECK(test::db_integer(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'") == 1);

    // The same command again: the finished images that succeeded are skipped; the rest
    // (and a failed one, which may have been fixed since) are analysed.
    std::size_t ok_before = 0;
    for (const auto& [path, row] : image_rows(db)) ok_before += std::get<0>(row) == "ok" ? 1 : 0;
    const auto r = test::run_cli({"batch", dir.string(), "--db", db.string(), "--json"});
    std::size_t skipped = 0;
    std::istringstream out(r.out);
    for (std::string line; std::getline(out, line);)
        if (Json::parse(line)["status"] == "skipped") ++skipped;
    CHECK(skipped == ok_before);
    CHECK(ok_before >= 1);
    // Every image has a row, and no image was analysed successfully twice.
    CHECK(test::db_integer(db, "SELECT count(DISTINCT path) FROM images") == 5);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images WHERE status = 'ok'") == 4);

    // A changed image (new mtime) is analysed again; unchanged ones are not.
    fs::last_write_time(images[2], fs::last_write_time(images[2]) + std::chrono::seconds(5));
    const auto again = test::run_cli({"batch", dir.string(), "--db", db.string(), "--json"});
    CHECK(again.out.find("\"path\":\"" + images[2] + "\",\"status\":\"ok\"") != std::string::npos);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images WHERE path = '" + images[2] + "'") == 2);

    // SIGINT once the batch has stored an image (a fixed delay raced a slow start): the process
    // ends with 130 and says how to resume.
    const fs::path db2 = dir / "interrupted.sqlite";
    const fs::path err = dir / "interrupted.err";
    const pid_t batch = spawn_cli({"batch", dir.string(), "--db", db2.string(), "--jobs", "1", "--read-rate", "256K/s"},
                                  err.string());
    wait_for_rows(db2, batch, 1);
    REQUIRE(::kill(batch, SIGINT) == 0);
    CHECK(wait_exit(batch) == 130);
    CHECK(test::file_contents(err).find("run the same command again to resume") != std::string::npos);
    CHECK(test::db_integer(db2, "SELECT count(*) FROM runs WHERE status = 'interrupted'") == 1);

    // history lists both analyses of the changed image, oldest first.
    const auto history = test::run_cli({"history", images[2], "--db", db.string(), "--json"});
    REQUIRE(history.status == 0);
    CHECK(Json::parse(history.out).size() == 2);
}

TEST_CASE("a schema-1 results database is upgraded in place and keeps its rows", "[batch][schema]") {
    const Scratch store{make_datastore("batch-schema")};
    const fs::path& dir = store.dir;
    const fs::path db = dir / "old.sqlite";
    REQUIRE(test::run_cli({"batch", dir.string(), "--db", db.string()}).status == 2);  // broken.img fails
    const std::int64_t stored = test::db_integer(db, "SELECT count(*) FROM metrics");
    REQUIRE(stored == 4);
    {
        // What schema 1 wrote: no host_* columns, no run owners, no claims, no apply tables,
        // no copy columns, no compactions, no plan IO.
        batch::Database d(db.string(), false);
        for (const char* column :
             {"host_extents", "host_seeks", "host_backward_seeks", "host_fragmentation_percent"})
            d.exec(std::string("ALTER TABLE metrics DROP COLUMN ") + column);
        for (const char* column : {"host", "boot_id", "pid", "pid_start"})
            d.exec(std::string("ALTER TABLE runs DROP COLUMN ") + column);
        d.exec("DROP TABLE claims");
        d.exec("DROP TABLE apply_skips");
        d.exec("DROP TABLE applies");
        d.exec("DROP TABLE compactions");
        for (const char* column : {"copy_commands_4m", "copy_commands_16m"})
            d.exec(std::string("ALTER TABLE images DROP COLUMN ") + column);
        test::drop_columns_after(d, 1);
        d.exec("PRAGMA user_version = 1");
    }
    const std::string image = (dir / "vm41.img").string();
    const auto old_history = test::run_cli({"history", image, "--db", db.string(), "--json"});
    INFO(old_history.err);
    REQUIRE(old_history.status == 0);
    const Json rows = Json::parse(old_history.out);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0]["host_seeks"].is_null());  // not measured then, not invented now
    CHECK(test::db_integer(db, "PRAGMA user_version") == batch::kSchemaVersion);
    CHECK(test::db_integer(db, "SELECT count(*) FROM metrics WHERE host_seeks IS NULL") == stored);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images WHERE copy_commands_4m IS NULL") == 5);

    // A new run adds measured rows beside the old ones.
    REQUIRE(test::run_cli({"batch", image, "--db", db.string(), "--force"}).status == 0);
    const Json both = Json::parse(test::run_cli({"history", image, "--db", db.string(), "--json"}).out);
    REQUIRE(both.size() == 2);
    CHECK(both[0]["host_seeks"].is_null());
    const Json a = Json::parse(test::run_cli({"analyze", image, "--json"}).out);
    CHECK(both[1]["host_seeks"] == a["volumes"][0]["layers"][0]["host"]["seeks"]);
    const auto text = test::run_cli({"history", image, "--db", db.string()});
    CHECK(text.out.find("host %") != std::string::npos);
}

TEST_CASE("a schema-4 results database gains the copy columns in place and keeps its rows",
          "[batch][schema][copy]") {
    const Scratch store{make_datastore("batch-schema3")};
    const fs::path& dir = store.dir;
    const fs::path db = dir / "v3.sqlite";
    REQUIRE(test::run_cli({"batch", dir.string(), "--db", db.string()}).status == 2);  // broken.img fails
    const std::int64_t images = test::db_integer(db, "SELECT count(*) FROM images");
    const std::int64_t metrics = test::db_integer(db, "SELECT count(*) FROM metrics");
    REQUIRE(images == 5);
    const std::int64_t seeks = test::db_integer(db, "SELECT sum(host_seeks) FROM metrics");
    {
        // What schema 4 wrote: everything but the images' copy columns, the compactions and
        // the plan IO.
        batch::Database d(db.string(), false);
        for (const char* column : {"copy_commands_4m", "copy_commands_16m"})
            d.exec(std::string("ALTER TABLE images DROP COLUMN ") + column);
        d.exec("DROP TABLE compactions");
        test::drop_columns_after(d, 4);
        d.exec("PRAGMA user_version = 4");
    }
    const std::string image = (dir / "vm42.img").string();
    const auto history = test::run_cli({"history", image, "--db", db.string(), "--json"});
    INFO(history.err);
    REQUIRE(history.status == 0);
    CHECK(Json::parse(history.out).size() == 1);
    CHECK(test::db_integer(db, "PRAGMA user_version") == batch::kSchemaVersion);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images") == images);
    CHECK(test::db_integer(db, "SELECT count(*) FROM metrics") == metrics);
    CHECK(test::db_integer(db, "SELECT sum(host_seeks) FROM metrics") == seeks);
    CHECK(test::db_integer(db,
                "SELECT count(*) FROM images WHERE copy_commands_4m IS NULL AND copy_commands_16m IS NULL") ==
          images);  // not measured then, not invented now

    // A new run stores the figures analyze reports, beside the old rows.
    REQUIRE(test::run_cli({"batch", image, "--db", db.string(), "--force"}).status == 0);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images") == images + 1);
    check_copy_columns(db, image, Json::parse(test::run_cli({"analyze", image, "--json"}).out));
}

TEST_CASE("batch --device-model records the plan's own IO as impact times it, and schema 6 gains the columns",
          "[batch][schema][device-model]") {
    MkImageOptions o;
    o.disk_size = 40ull << 20;
    o.files = 150;
    o.seed = 42;
    const Scratch work{test::scratch_dir() / ("batch-device." + std::to_string(::getpid()))};
    fs::create_directories(work.dir);
    const fs::path image = work.dir / "vm.img";
    fs::copy_file(test::generated_image("batch-42", o), image);
    const fs::path model = work.dir / "model.json";
    std::ofstream(model) << R"({"ssd": {"io_latency_seconds": 0.001}, "array": {"write_io_seconds": 0.002}})";
    const fs::path db = work.dir / "b.sqlite";

    // The device model alone asks for plans: it times nothing else.
    const auto r = test::run_cli({"batch", image.string(), "--db", db.string(), "--device-model", model.string(),
                                  "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    REQUIRE(test::db_integer(db, "SELECT count(*) FROM plans") == 1);

    // The oracle: impact of the recorded plan with the same model, on the disk as provisioned.
    const fs::path plan = work.dir / "plan.json";
    double seconds[3] = {};
    double reads = 0;
    {
        batch::Database d(db.string(), false);
        batch::Statement row(d, "SELECT plan_json, plan_ios, plan_first_writes, plan_seconds_hdd, plan_seconds_ssd, "
                                "plan_seconds_array FROM plans");
        REQUIRE(row.step());
        std::ofstream(plan) << row.text(0);
        const auto impact = test::run_cli({"impact", image.string(), "--plan", plan.string(), "--device-model",
                                           model.string(), "--json"});
        INFO(impact.err);
        REQUIRE(impact.status == 0);
        const Json writes = Json::parse(impact.out)["figures"]["plan_writes"];
        CHECK(row.integer(1) == writes["ios"].get<std::int64_t>());
        reads = writes["reads"].get<double>();
        CHECK(reads > 0);
        const std::string type = writes["provisioning"]["type"];
        for (const Json& p : writes["provisioned"]) {
            if (p["type"] != type) continue;
            CHECK(row.integer(2) == p["first_writes"].get<std::int64_t>());
            int k = 3;
            for (const char* name : {"hdd", "ssd", "array"}) {
                seconds[k - 3] = row.real(k);
                CHECK(row.real(k++) == Approx(p["models"][name]["device_seconds"].get<double>()).epsilon(1e-12));
            }
        }
    }
    // The model's 1 ms per SSD read is in it: each of the plan's reads costs at least that.
    CHECK(seconds[1] >= 0.001 * reads);
    CHECK(test::batch_json_lines(r.out).at(image.string())["volumes"][0]["plan"]["device_seconds"]["ssd"] ==
          Approx(seconds[1]).epsilon(1e-12));

    {
        // What schema 6 wrote: plans without their own IO.
        batch::Database d(db.string(), false);
        test::drop_columns_after(d, 6);
        d.exec("PRAGMA user_version = 6");
    }
    { const batch::ResultsDb upgraded(db.string(), false); }
    CHECK(test::db_integer(db, "PRAGMA user_version") == batch::kSchemaVersion);
    CHECK(test::db_integer(db, "SELECT count(*) FROM plans WHERE plan_ios IS NULL AND plan_seconds_ssd IS NULL") == 1);
    const fs::path merged = work.dir / "merged.sqlite";
    REQUIRE(test::run_cli({"merge", merged.string(), db.string()}).status == 0);
    CHECK(test::db_integer(merged, "SELECT count(*) FROM plans WHERE plan_ios IS NULL") == 1);
    // A new run records them beside the old row; a model file that is not one is a usage error.
    REQUIRE(test::run_cli({"batch", image.string(), "--db", db.string(), "--force", "--preset", "3par-format"})
                .status == 0);
    CHECK(test::db_integer(db, "SELECT count(*) FROM plans WHERE plan_ios > 0") == 1);
    const auto bad = test::run_cli({"batch", image.string(), "--db", db.string(), "--device-model", plan.string()});
    CHECK(bad.status == 1);
    CHECK_THAT(bad.err, Catch::StartsWith("guestfrag: error: " + plan.string() + ": "));
}

TEST_CASE("batch --read-rate keeps all workers together under the rate", "[batch][rate]") {
    const Scratch store{make_datastore("batch-rate")};
    const fs::path& dir = store.dir;
    const std::vector<std::string> images = batch::expand_images({dir.string()}, std::nullopt);
    batch::ResultsDb results((dir / "results.sqlite").string(), true);
    batch::BatchOptions options;
    options.jobs = 3;
    options.read_rate = 1 << 20;  // 1 MiB/s; the bucket holds 256 KiB
    const auto start = std::chrono::steady_clock::now();
    const batch::BatchSummary s = batch::run_batch(results, results.begin_run("test", ""), images, options, {});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE(s.bytes_read > 2 * options.read_rate);  // long enough to measure
    const double rate = static_cast<double>(s.bytes_read) / seconds;
    INFO(s.bytes_read << " bytes in " << seconds << " s");
    // The bucket's first 256 KiB come at once; beyond that the rate holds. The lower bound
    // only guards against a limiter that stalls (the run is read-bound at this rate).
    CHECK(rate <= 1.1 * static_cast<double>(options.read_rate));
    CHECK(rate >= 0.5 * static_cast<double>(options.read_rate));
}

TEST_CASE("shards cover every image once and merge into the unsharded result", "[batch][shard]") {
    const Scratch store{make_datastore("batch-shards")};
    const fs::path& dir = store.dir;
    const fs::path whole = dir / "whole.sqlite";
    const fs::path one = dir / "one.sqlite";
    const fs::path two = dir / "two.sqlite";
    const fs::path merged = dir / "merged.sqlite";
    test::run_cli({"batch", dir.string(), "--db", whole.string()});
    test::run_cli({"batch", dir.string(), "--db", one.string(), "--shard", "1/2"});
    test::run_cli({"batch", dir.string(), "--db", two.string(), "--shard", "2/2"});
    const auto a = image_rows(one);
    const auto b = image_rows(two);
    for (const auto& [path, row] : a) CHECK_FALSE(b.contains(path));
    CHECK(a.size() + b.size() == 5);

    const auto r = test::run_cli({"merge", merged.string(), one.string(), two.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(image_rows(merged) == image_rows(whole));
    CHECK(test::db_integer(merged, "SELECT count(*) FROM runs") == 2);
    CHECK(test::db_integer(merged, "SELECT count(*) FROM metrics") == test::db_integer(whole, "SELECT count(*) FROM metrics"));
    // Foreign keys hold after renumbering.
    CHECK(test::db_integer(merged, "SELECT count(*) FROM volumes v LEFT JOIN images i USING (image_id) WHERE i.path IS NULL") == 0);

    // Merging something that is not a results database fails with one line.
    const auto bad = test::run_cli({"merge", merged.string(), (dir / "vm41.img").string()});
    CHECK(bad.status == 2);
    CHECK(bad.err == "guestfrag: error: " + (dir / "vm41.img").string() + ": file is not a database\n");

    // OUT among the inputs is a usage error naming it, before any database is opened.
    const auto self = test::run_cli({"merge", merged.string(), one.string(), merged.string()});
    CHECK(self.status == 1);
    CHECK(self.err == "guestfrag: error: " + merged.string() +
                          ": OUT is also given as an input (IN): a database cannot be merged into itself\n");
    CHECK(test::db_integer(merged, "SELECT count(*) FROM runs") == 2);
}

TEST_CASE("batch refuses a FIFO named as an image in its row, without waiting for a writer",
          "[batch][hostile]") {
    const Scratch store{make_datastore("batch-fifo")};
    const fs::path fifo = store.dir / "pipe.vmdk";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const fs::path db = store.dir / "fifo.sqlite";
    // No writer ever opens the FIFO: an open() that waited would hang here.
    const auto r = test::run_cli({"batch", fifo.string(), "--db", db.string()});
    CHECK(r.status == 2);
    CHECK(r.err.find("1 of 1 images failed") != std::string::npos);
    const auto rows = image_rows(db);
    REQUIRE(rows.size() == 1);
    CHECK(std::get<0>(rows.begin()->second) == "failed");
    CHECK(std::get<1>(rows.begin()->second) == "not a regular file or block device");
}

TEST_CASE("a batch killed with SIGKILL keeps its finished rows and the next run marks it interrupted",
          "[batch][hostile]") {
    const Scratch store{make_datastore("batch-kill")};
    const fs::path db = store.dir / "killed.sqlite";
    // Throttled so that it is still working when it is killed.
    const pid_t killed = spawn_cli({"batch", store.dir.string(), "--db", db.string(), "--jobs", "1", "--read-rate",
                                    "256K/s"});
    wait_for_rows(db, killed, 2);
    REQUIRE(::kill(killed, SIGKILL) == 0);
    REQUIRE(wait_exit(killed) == 128 + SIGKILL);

    // Every row it committed is there, the file is sound, and the run still says running:
    // nothing could mark it.
    const std::int64_t kept = test::db_integer(db, "SELECT count(*) FROM images");
    CHECK(kept >= 2);
    {
        batch::Database d(db.string(), false);
        batch::Statement check(d, "PRAGMA integrity_check");
        REQUIRE(check.step());
        CHECK(check.text(0) == "ok");
    }
    CHECK(test::db_integer(db, "SELECT count(*) FROM runs WHERE status = 'running'") == 1);

    // The next run finds the process gone: the run becomes interrupted and its claim on the
    // image it was analysing is released, so this run finishes the batch.
    const auto next = test::run_cli({"batch", store.dir.string(), "--db", db.string(), "--json"});
    INFO(next.err);
    CHECK(next.err.find("batch: run 1 stopped without finishing (its process is gone): marked interrupted") !=
          std::string::npos);
    CHECK(test::db_integer(db, "SELECT count(*) FROM runs WHERE run_id = 1 AND status = 'interrupted' AND finished IS NOT NULL") ==
          1);
    CHECK(test::db_integer(db, "SELECT count(*) FROM runs WHERE run_id = 2 AND status = 'finished'") == 1);
    CHECK(test::db_integer(db, "SELECT count(*) FROM claims") == 0);
    CHECK(test::db_integer(db, "SELECT count(DISTINCT path) FROM images WHERE status = 'ok'") == 4);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images WHERE status = 'ok'") == 4);  // none redone
    CHECK(next.out.find("\"status\":\"busy\"") == std::string::npos);
}

TEST_CASE("two batches on one database at once analyse every image once", "[batch][concurrent]") {
    const Scratch store{make_datastore("batch-twice")};
    const fs::path db = store.dir / "shared.sqlite";
    const pid_t first = spawn_cli({"batch", store.dir.string(), "--db", db.string(), "--jobs", "1", "--read-rate",
                                   "256K/s"});
    wait_for_rows(db, first, 1);
    // The first batch holds a claim on everything it has taken until it ends: the second
    // leaves those to it and does the rest.
    const auto second = test::run_cli({"batch", store.dir.string(), "--db", db.string(), "--json"});
    INFO(second.err);
    CHECK(second.out.find("\"status\":\"busy\",\"run\":1") != std::string::npos);
    CHECK(second.err.find("left to a batch running beside it") != std::string::npos);
    CHECK(wait_exit(first) != 128 + SIGKILL);

    CHECK(test::db_integer(db, "SELECT count(*) FROM runs WHERE status = 'finished'") == 2);
    // Five images (one of them broken), each analysed by exactly one of the two runs.
    CHECK(test::db_integer(db, "SELECT count(*) FROM images") == 5);
    CHECK(test::db_integer(db, "SELECT count(DISTINCT path) FROM images") == 5);
    CHECK(test::db_integer(db, "SELECT count(DISTINCT run_id) FROM images") == 2);
    CHECK(test::db_integer(db, "SELECT count(*) FROM claims") == 0);
}

TEST_CASE("batch usage errors and shard arithmetic", "[batch]") {
    CHECK(test::run_cli({"batch"}).status == 1);
    CHECK(test::run_cli({"batch", "x.img", "--shard", "3/2"}).status == 1);
    CHECK(test::run_cli({"batch", "x.img", "--jobs", "0"}).status == 1);
    REQUIRE(batch::parse_shard("2/5"));
    CHECK(batch::parse_shard("2/5")->index == 2);
    CHECK_FALSE(batch::parse_shard("0/5"));
    CHECK_FALSE(batch::parse_shard("2/"));
    // Every path lands in exactly one shard of N.
    for (const std::string p : {"/a.vmdk", "/datastore1/vm/vm.vmdk", "/x/y.qcow2"}) {
        int in = 0;
        for (std::uint32_t k = 1; k <= 7; ++k) in += batch::in_shard(p, {k, 7}) ? 1 : 0;
        CHECK(in == 1);
    }
    CHECK(batch::looks_like_image("vm.vmdk"));
    CHECK_FALSE(batch::looks_like_image("vm-flat.vmdk"));
    CHECK_FALSE(batch::looks_like_image("vm-s001.vmdk"));
    CHECK(batch::looks_like_image("Disk.AVHDX"));
    CHECK_FALSE(batch::looks_like_image("notes.txt"));
}
