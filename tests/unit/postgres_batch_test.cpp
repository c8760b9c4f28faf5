// SPDX-License-Identifier: GPL-2.0-or-later
// The results database on a real PostgreSQL server the test starts: batch, history and merge
// give what they give on SQLite; concurrent and killed batches; a database of the previous
// schema migrates; and every failure to reach or use the server is one line and exit 2.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "app/batch/database.hpp"
#include "app/batch/postgres.hpp"
#include "app/batch/results_db.hpp"
#include "support/batch_results.hpp"
#include "support/fixtures.hpp"
#include "support/postgres_server.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;
using test::db_integer;

namespace {

/// Every column of every row of `table` (ids left out: each engine numbers its own), as text,
/// in the order of `order_by`.
std::vector<std::vector<std::string>> rows_of(const std::string& db, const std::string& sql) {
    const auto d = batch::open_database(db, false);
    batch::Statement s(*d, sql);
    std::vector<std::vector<std::string>> rows;
    while (s.step()) {
        std::vector<std::string> row;
        for (int c = 0; c < s.columns(); ++c) {
            const batch::SqlValue v = s.value(c);
            // Reals compared as numbers: SQLite and PostgreSQL print them differently.
            if (const auto* real = std::get_if<double>(&v))
                row.push_back(std::to_string(*real));
            else
                row.push_back(s.is_null(c) ? "NULL" : s.text(c));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

/// What a batch stored per image and volume, engine-neutral: the figures without ids or times.
std::vector<std::vector<std::string>> stored_figures(const std::string& db) {
    return rows_of(
        db,
        "SELECT i.path, i.status, coalesce(i.error, ''), i.format, i.virtual_size, i.allocated_bytes, "
        "i.copy_commands_4m, v.partition, v.cluster_size, v.free_clusters, v.label, v.serial, "
        "m.files, m.fragmented_files, m.excess_fragments, m.fragmentation_percent, m.free_extents, "
        "m.reclaimable_bytes, m.host_seeks, p.strategy, p.moves, p.moved_bytes, p.thin_growth_bytes, "
        "p.plan_json, (SELECT count(*) FROM warnings w WHERE w.volume_id = v.volume_id) "
        "FROM images i LEFT JOIN volumes v ON v.image_id = i.image_id "
        "LEFT JOIN metrics m ON m.volume_id = v.volume_id LEFT JOIN plans p ON p.volume_id = v.volume_id "
        "ORDER BY i.path, v.partition");
}

}  // namespace

TEST_CASE("batch, history, fleet and merge on PostgreSQL store and read what they do on SQLite",
          "[batch][postgres]") {
    const test::PostgresServer server;
    const test::Scratch store{test::make_datastore("pg-rows")};
    const fs::path& dir = store.dir;
    const fs::path file = dir / "whole.sqlite";
    const std::string pg = server.uri();

    const auto local = test::run_cli({"batch", dir.string(), "--db", file.string(), "--plan", "--json"});
    const auto remote = test::run_cli({"batch", dir.string(), "--db", pg, "--plan", "--json"});
    INFO(remote.err);
    CHECK(remote.status == 2);  // broken.img
    CHECK(remote.err.find("1 of 5 images failed (their rows in " + pg + " say why)") != std::string::npos);
    CHECK(test::batch_json_lines(remote.out).size() == 5);
    const auto figures = stored_figures(file.string());
    REQUIRE(figures.size() == 5);
    CHECK(stored_figures(pg) == figures);
    CHECK(db_integer(pg, "SELECT version FROM guestfrag_schema") == batch::kSchemaVersion);
    CHECK(db_integer(pg, "SELECT count(*) FROM runs WHERE status = 'finished'") == 1);
    CHECK(db_integer(pg, "SELECT count(*) FROM claims") == 0);

    // Unchanged images are skipped on the next run, as with SQLite.
    const auto again = test::run_cli({"batch", dir.string(), "--db", pg, "--json"});
    std::size_t skipped = 0;
    for (const auto& [path, line] : test::batch_json_lines(again.out))
        skipped += line["status"] == "skipped" ? 1 : 0;
    CHECK(skipped == 4);

    // history reads the same rows from either engine.
    const std::string image = (dir / "vm41.img").string();
    const auto h_file = test::run_cli({"history", image, "--db", file.string(), "--json"});
    const auto h_pg = test::run_cli({"history", image, "--db", pg, "--json"});
    INFO(h_pg.err);
    REQUIRE(h_pg.status == 0);
    Json a = Json::parse(h_file.out), b = Json::parse(h_pg.out);
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 1);
    a[0].erase("analyzed_at");
    b[0].erase("analyzed_at");
    CHECK(a == b);

    // The fleet view reads the same from either engine.
    const auto fleet_of = [](const std::string& db) {
        const auto r = test::run_cli({"fleet", "--db", db, "--json"});
        INFO(r.err);
        REQUIRE(r.status == 0);
        Json j = Json::parse(r.out);
        for (Json& i : j["images"]) i.erase("analyzed_at");
        return j;
    };
    const Json fleet_file = fleet_of(file.string());
    CHECK(fleet_file["images"].size() == 4);
    CHECK(fleet_of(pg) == fleet_file);

    // Shards in SQLite files folded into a fresh PostgreSQL database equal the whole run.
    const fs::path one = dir / "one.sqlite", two = dir / "two.sqlite";
    test::run_cli({"batch", dir.string(), "--db", one.string(), "--shard", "1/2", "--plan"});
    test::run_cli({"batch", dir.string(), "--db", two.string(), "--shard", "2/2", "--plan"});
    server.sql("CREATE DATABASE fleet");
    const std::string fleet = server.uri("fleet");
    const auto merged = test::run_cli({"merge", fleet, one.string(), two.string()});
    INFO(merged.err);
    REQUIRE(merged.status == 0);
    CHECK(merged.out == "merged 2 database(s) into " + fleet + "\n");
    CHECK(stored_figures(fleet) == figures);
    CHECK(db_integer(fleet, "SELECT count(*) FROM runs") == 2);
    CHECK(db_integer(
              fleet,
              "SELECT count(*) FROM volumes v LEFT JOIN images i USING (image_id) WHERE i.path IS NULL") ==
          0);
    // Rows added after a merge take the next ids (the merge did not set them by hand).
    REQUIRE(test::run_cli({"batch", image, "--db", fleet, "--force"}).status == 0);
    CHECK(db_integer(fleet, "SELECT count(*) FROM runs") == 3);
    CHECK(db_integer(fleet, "SELECT count(*) FROM images") == 6);
}

TEST_CASE("batches on PostgreSQL: two at once do no image twice, a killed one is marked interrupted",
          "[batch][postgres][concurrent]") {
    const test::PostgresServer server;
    const test::Scratch store{test::make_datastore("pg-concurrent")};
    const std::string pg = server.uri();

    SECTION("two at once") {
        const pid_t first = test::spawn_cli(
            {"batch", store.dir.string(), "--db", pg, "--jobs", "1", "--read-rate", "256K/s"});
        test::wait_for_rows(pg, first, 1);
        const auto second = test::run_cli({"batch", store.dir.string(), "--db", pg, "--json"});
        INFO(second.err);
        CHECK(second.out.find("\"status\":\"busy\",\"run\":1") != std::string::npos);
        CHECK(test::wait_exit(first) != 128 + SIGKILL);
        CHECK(db_integer(pg, "SELECT count(*) FROM runs WHERE status = 'finished'") == 2);
        CHECK(db_integer(pg, "SELECT count(*) FROM images") == 5);
        CHECK(db_integer(pg, "SELECT count(DISTINCT path) FROM images") == 5);
        CHECK(db_integer(pg, "SELECT count(DISTINCT run_id) FROM images") == 2);
        CHECK(db_integer(pg, "SELECT count(*) FROM claims") == 0);
    }
    SECTION("SIGKILL") {
        const pid_t killed = test::spawn_cli(
            {"batch", store.dir.string(), "--db", pg, "--jobs", "1", "--read-rate", "256K/s"});
        test::wait_for_rows(pg, killed, 2);
        REQUIRE(::kill(killed, SIGKILL) == 0);
        REQUIRE(test::wait_exit(killed) == 128 + SIGKILL);
        const std::int64_t kept = db_integer(pg, "SELECT count(*) FROM images");
        CHECK(kept >= 2);
        CHECK(db_integer(pg, "SELECT count(*) FROM runs WHERE status = 'running'") == 1);

        const auto next = test::run_cli({"batch", store.dir.string(), "--db", pg, "--json"});
        INFO(next.err);
        CHECK(next.err.find(
                  "batch: run 1 stopped without finishing (its process is gone): marked interrupted") !=
              std::string::npos);
        CHECK(db_integer(pg, "SELECT count(*) FROM runs WHERE run_id = 1 AND status = 'interrupted'") == 1);
        CHECK(db_integer(pg, "SELECT count(*) FROM claims") == 0);
        CHECK(db_integer(pg, "SELECT count(*) FROM images WHERE status = 'ok'") == 4);  // none redone
        CHECK(next.out.find("\"status\":\"busy\"") == std::string::npos);
    }
}

TEST_CASE("a run on another host is dead once its heartbeat is older than the lease", "[batch][postgres][concurrent]") {
    const test::PostgresServer server;
    const test::Scratch store{test::make_datastore("pg-lease")};
    const std::string pg = server.uri();
    {
        batch::ResultsDb created(pg, true);
    }
    // Two runs of another host that no process check can reach: one silent for an hour, one
    // that beat a second ago; each holds the claim of one image.
    const long now = static_cast<long>(std::time(nullptr));
    for (const long beat : {now - 3600, now - 1})
        server.sql("INSERT INTO runs (started, arguments, host, boot_id, pid, pid_start, heartbeat) VALUES "
                   "('2026-01-01T00:00:00Z', 'batch elsewhere', 'another-host', 'b', 4242, 1, " +
                   std::to_string(beat) + ")");
    const std::string stale = (store.dir / "vm41.img").string(), fresh = (store.dir / "vm42.img").string();
    server.sql("INSERT INTO claims VALUES ('" + stale + "', 1, 'now'), ('" + fresh + "', 2, 'now')");

    const auto r = test::run_cli({"batch", store.dir.string(), "--db", pg, "--json"});
    INFO(r.err);
    CHECK(r.err.find("batch: run 1 stopped without finishing") != std::string::npos);
    CHECK(r.err.find("run 2 stopped") == std::string::npos);
    const auto lines = test::batch_json_lines(r.out);
    CHECK(lines.at(stale)["status"] == "ok");
    CHECK(lines.at(fresh)["status"] == "busy");
    CHECK(lines.at(fresh)["run"] == 2);
    CHECK(db_integer(pg, "SELECT count(*) FROM runs WHERE run_id = 1 AND status = 'interrupted'") == 1);
    CHECK(db_integer(pg, "SELECT count(*) FROM runs WHERE run_id = 2 AND status = 'running'") == 1);
    // This batch's own run kept its lease: its heartbeat is from its start or later.
    CHECK(db_integer(pg, "SELECT heartbeat FROM runs WHERE run_id = 3") >= now);
}

TEST_CASE("a PostgreSQL results database of schema 7 migrates and keeps its rows",
          "[batch][postgres][schema]") {
    const test::PostgresServer server;
    const test::Scratch store{test::make_datastore("pg-schema")};
    const std::string pg = server.uri();
    const std::string image = (store.dir / "vm42.img").string();
    REQUIRE(test::run_cli({"batch", image, "--db", pg, "--plan"}).status == 0);
    const auto before = stored_figures(pg);
    {
        // What schema 7 wrote: every later upgrade step runs, in one transaction.
        batch::PostgresConnection d(pg);
        test::drop_columns_after(d, 7);
        d.set_schema_version(7);
    }
    CHECK(db_integer(pg, "SELECT version FROM guestfrag_schema") == 7);
    const auto history = test::run_cli({"history", image, "--db", pg, "--json"});
    INFO(history.err);
    REQUIRE(history.status == 0);
    CHECK(db_integer(pg, "SELECT version FROM guestfrag_schema") == batch::kSchemaVersion);
    CHECK(stored_figures(pg) == before);
    // Not measured then, not invented now.
    CHECK(
        db_integer(
            pg, "SELECT count(*) FROM images WHERE datastore IS NULL AND copy_relaid_commands_4m IS NULL") ==
        1);
    // The columns have PostgreSQL's types for SQLite's INTEGER and REAL.
    CHECK(db_integer(
              pg,
              "SELECT count(*) FROM information_schema.columns WHERE table_name IN ('images', 'plans') AND "
              "(column_name, data_type) IN (('copy_relaid_commands_4m', 'bigint'), ('datastore', 'text'), "
              "('plan_seconds_hdd', 'double precision'))") == 3);
    // The verdicts table of schema 9 with schema 10's column: there, empty for the volumes
    // stored before it.
    CHECK(db_integer(pg, "SELECT count(*) FROM verdicts") == 0);
    CHECK(db_integer(pg,
                     "SELECT count(*) FROM information_schema.columns WHERE table_name = 'verdicts' AND "
                     "(column_name, data_type) IN (('now_seconds', 'double precision'), ('moved_bytes', "
                     "'bigint'), ('work_seconds', 'double precision'))") == 3);
}

TEST_CASE("PostgreSQL failures are one line and exit 2, with no password printed",
          "[batch][postgres][hostile]") {
    const test::PostgresServer server;
    const test::Scratch store{test::make_datastore("pg-errors")};
    const std::string image = (store.dir / "vm41.img").string();
    const auto one_line = [](const test::CommandResult& r) {
        return r.err.find('\n') == r.err.size() - 1 && r.err.starts_with("guestfrag: error: ");
    };

    SECTION("server unreachable") {
        const std::string uri = "postgresql://guestfrag@/postgres?host=" + server.directory() + "/nowhere";
        const auto r = test::run_cli({"batch", image, "--db", uri});
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(one_line(r));
        CHECK(r.err.find("No such file or directory") != std::string::npos);
    }
    SECTION("wrong password") {
        server.sql("CREATE ROLE tenant LOGIN PASSWORD 'right'");
        const std::string uri = server.uri("postgres", "tenant", "wrong");
        const auto r = test::run_cli({"history", image, "--db", uri});
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(one_line(r));
        CHECK(r.err.find("password authentication failed for user \"tenant\"") != std::string::npos);
        CHECK(r.err.find("wrong") == std::string::npos);
        CHECK(r.err.find("postgresql://tenant:***@/postgres") != std::string::npos);
    }
    SECTION("a schema newer than this guestfrag") {
        REQUIRE(test::run_cli({"batch", image, "--db", server.uri()}).status == 0);
        server.sql("UPDATE guestfrag_schema SET version = 99");
        const auto r = test::run_cli({"batch", image, "--db", server.uri(), "--force"});
        CHECK(r.status == 2);
        CHECK(r.err ==
              "guestfrag: error: " + server.uri() + ": results database of a newer guestfrag (schema 99)\n");
        CHECK(db_integer(server.uri(), "SELECT count(*) FROM runs") == 1);  // nothing written
    }
    SECTION("without the PostgreSQL module, or with another library in its place") {
        // The CLI installed without guestfrag-postgresql: no module where it looks. Then the C
        // library (loadable, but not the module) in its place.
        const std::string modules = std::getenv("GUESTFRAG_MODULE_DIR");
        const test::WorkDir empty("pg-no-module");
        const fs::path module = empty / "postgresql.so";
        setenv("GUESTFRAG_MODULE_DIR", empty.path().c_str(), 1);
        const auto missing = test::run_cli({"history", image, "--db", server.uri()});
        Dl_info libc{};
        REQUIRE(dladdr(reinterpret_cast<void*>(&::getpid), &libc) != 0);
        fs::create_symlink(libc.dli_fname, module);
        const auto other = test::run_cli({"history", image, "--db", server.uri()});
        setenv("GUESTFRAG_MODULE_DIR", modules.c_str(), 1);
        CHECK(missing.status == 2);
        CHECK(missing.err ==
              "guestfrag: error: " + server.uri() +
                  ": a postgresql:// database needs the guestfrag-postgresql package: " + module.string() +
                  ": cannot open shared object file: No such file or directory\n");
        CHECK(other.status == 2);
        const std::string version = test::run_cli({"--version"}).out.substr(std::strlen("guestfrag "));
        CHECK(other.err == "guestfrag: error: " + server.uri() + ": " + module.string() +
                               " is not guestfrag-postgresql " + version.substr(0, version.find('\n')) +
                               ", the version of this guestfrag\n");
    }
    SECTION("not a URI") {
        const auto r = test::run_cli({"batch", image, "--db", "host=/tmp dbname=x"});
        CHECK(r.status == 2);
        CHECK(r.err ==
              "guestfrag: error: host=/tmp dbname=x: not a PostgreSQL URI (postgresql://…) nor a database "
              "file name\n");
        CHECK_FALSE(fs::exists("host=/tmp dbname=x"));
        const auto bad = test::run_cli({"batch", image, "--db", "postgresql://[::1/x"});
        INFO(bad.err);
        CHECK(bad.status == 2);
        CHECK(one_line(bad));
    }
    SECTION("a database that is not guestfrag's") {
        server.sql("CREATE TABLE customers (id integer)");
        const auto r = test::run_cli({"batch", image, "--db", server.uri()});
        CHECK(r.status == 2);
        CHECK(r.err == "guestfrag: error: " + server.uri() + ": not a guestfrag results database\n");
    }
    SECTION("the server goes away mid-batch") {
        const pid_t batch = test::spawn_cli(
            {"batch", store.dir.string(), "--db", server.uri(), "--jobs", "1", "--read-rate", "256K/s"});
        test::wait_for_rows(server.uri(), batch, 1);
        server.stop();
        CHECK(test::wait_exit(batch) == 2);
        server.start();
        // What it finished is kept; the run is still "running" (nothing could mark it) and
        // the next batch marks it interrupted.
        CHECK(db_integer(server.uri(), "SELECT count(*) FROM images") >= 1);
        const auto next = test::run_cli({"batch", store.dir.string(), "--db", server.uri()});
        CHECK(next.err.find("batch: run 1 stopped without finishing") != std::string::npos);
        CHECK(db_integer(server.uri(), "SELECT count(DISTINCT path) FROM images") == 5);
    }
}

TEST_CASE("PostgreSQL dialect: types, parameters and the printed name", "[batch][postgres]") {
    CHECK(
        batch::postgres_ddl("CREATE TABLE t (\n  id INTEGER PRIMARY KEY,\n  v INTEGER PRIMARY KEY REFERENCES "
                            "u(id),\n  x REAL NOT NULL,\n  realm TEXT, integers INTEGER\n)") ==
        "CREATE TABLE t (\n  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n  v BIGINT PRIMARY KEY "
        "REFERENCES u(id),\n  x DOUBLE PRECISION NOT NULL,\n  realm TEXT, integers BIGINT\n)");
    CHECK(batch::database_name("postgresql://u:secret@db.example:5432/fleet?sslmode=require") ==
          "postgresql://u:***@db.example:5432/fleet?sslmode=require");
    CHECK(batch::database_name("postgres:///fleet?host=/run/pg&password=secret&user=u") ==
          "postgres:///fleet?host=/run/pg&password=***&user=u");
    CHECK(batch::database_name("postgresql://u@h/db") == "postgresql://u@h/db");
    CHECK(batch::database_name("/srv/results.sqlite") == "/srv/results.sqlite");
    CHECK(batch::is_postgres_uri("postgres://x"));
    CHECK_FALSE(batch::is_postgres_uri("results.sqlite"));
}
