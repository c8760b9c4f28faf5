// SPDX-License-Identifier: GPL-2.0-or-later
// `batch --compact-to DIR`: every image compacted into its own new image, as `guestfrag
// compact` compacts it, recorded per image (a refused compaction as that image's failure);
// the host file system's own block count and The Sleuth Kit read the outputs; the schema-6
// upgrade and merge. `schedule --compact`: the same compaction held to windows and a rate.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/batch/image_list.hpp"
#include "app/batch/results_db.hpp"
#include "app/batch/sqlite.hpp"
#include "support/batch_results.hpp"
#include "support/fixtures.hpp"
#include "support/ntfs_edit.hpp"
#include "support/tsk_oracle.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

/// A bare NTFS volume of 32 MiB, 300 files interleaved and 30 % of them deleted: free
/// clusters holding old data between used ones, so that both sparsifying and packing give
/// granules back.
fs::path volume_with_holes(std::uint32_t seed) {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = "none";
    o.files = 300;
    o.interleave = 8;
    o.delete_fraction = 0.3;
    o.seed = seed;
    return test::generated_image("batch-compact-" + std::to_string(seed), o);
}

/// Bytes the host file system holds for `path` (st_blocks), which compact reports as the
/// output's host bytes.
std::int64_t host_bytes(const fs::path& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<std::int64_t>(st.st_blocks) * 512;
}

}  // namespace

TEST_CASE(
    "batch --compact-to compacts each image into DIR as guestfrag compact does and records it, and a refused "
    "compaction as that image's failure",
    "[batch][compact]") {
    test::require_tools({"icat", "fls"});
    const test::WorkDir work("batch-compact");
    const fs::path store = work / "images";
    fs::create_directories(store);
    fs::copy_file(volume_with_holes(61), store / "vm.img");
    fs::copy_file(volume_with_holes(61), store / "unclean.img");
    test::mark_logfile_unclean(store / "unclean.img");
    const std::string image = (store / "vm.img").string();
    const std::string unclean = (store / "unclean.img").string();
    const std::uint64_t image_fingerprint = test::file_fingerprint(image);

    const fs::path compacted = work / "compacted";
    const fs::path db = work / "results.sqlite";
    const auto r = test::run_cli(
        {"batch", store.string(), "--db", db.string(), "--compact-to", compacted.string(), "--json"});
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("1 of 2 images failed") != std::string::npos);
    const auto lines = test::batch_json_lines(r.out);
    REQUIRE(lines.size() == 2);
    CHECK(test::file_fingerprint(image) == image_fingerprint);  // the input is only read

    const auto outputs = batch::output_paths({image, unclean}, compacted.string(), "raw");
    const fs::path output = outputs.at(image);
    CHECK(output.filename() == "vm.raw");
    CHECK(test::files_in(compacted) == std::set<std::string>{"vm.raw"});  // no temporary file either

    // The same image compacted by `guestfrag compact`: the batch records what it reports.
    const fs::path reference = work / "reference.raw";
    const auto single = test::run_cli({"compact", image, "-o", reference.string(), "--json"});
    INFO(single.err);
    REQUIRE(single.status == 0);
    const Json expected = Json::parse(single.out);
    const auto value = [&](const std::string& column) {
        return test::db_integer(
            db, "SELECT " + column + " FROM images i JOIN compactions c USING (image_id) WHERE i.path = ?",
            image);
    };
    CHECK(value("i.status = 'ok' AND c.status = 'ok' AND c.error IS NULL") == 1);
    CHECK(value("c.output = '" + output.string() + "' AND c.output_format = 'raw'") == 1);
    CHECK(value("c.granule_bytes") == expected["granule_bytes"]);
    CHECK(value("c.packed") == 1);
    CHECK(value("c.volumes") == 1);
    for (const char* stage : {"input", "sparsified", "packed", "output"}) {
        INFO(stage);
        CHECK(value(std::string("c.granules_") + stage) == expected["granules"][stage]);
    }
    CHECK(value("c.granules_output") < value("c.granules_input"));
    CHECK(value("c.host_bytes_input") == expected["host_bytes"]["input"]);
    CHECK(value("c.data_bytes_output") == expected["data_bytes_output"]);
    const Json& volume = expected["volumes"][0];
    CHECK(value("c.moves_planned") == volume["moves"]["planned"]);
    CHECK(value("c.moves_done") == volume["moves"]["done"]);
    CHECK(value("c.moves_done") > 0);
    CHECK(value("c.bytes_moved") == volume["bytes_moved"]);
    CHECK(value("c.verified") == 1);
    CHECK(value("c.streams_hashed") == volume["verification"]["streams_hashed"]);
    // The output as the host holds it.
    CHECK(value("c.host_bytes_output") == host_bytes(output));
    CHECK(value("c.host_bytes_output") < value("c.host_bytes_input"));
    CHECK(value("c.output_file_bytes") == static_cast<std::int64_t>(fs::file_size(output)));
    // The JSON line says the same.
    const Json& line = lines.at(image)["compact"];
    CHECK(line["status"] == "ok");
    CHECK(line["granules"] == expected["granules"]);
    CHECK(line["host_bytes"]["output"] == value("c.host_bytes_output"));
    CHECK(line["verification"]["streams_hashed"] == value("c.streams_hashed"));

    // The Sleuth Kit lists the same files in the output and reads them alike.
    const auto files = test::tsk_files(image, 0);
    const auto files_out = test::tsk_files(output, 0);
    CHECK(files_out == files);
    const auto in = test::tsk_contents(image, 0, files);
    const auto out = test::tsk_contents(output, 0, files_out);
    std::size_t compared = 0;
    for (const auto& [path, contents] : in) {
        if (path.starts_with("$")) continue;  // $MFT, $Bitmap and $MFTMirr record the moves
        INFO(path);
        CHECK(out.at(path) == contents);
        ++compared;
    }
    CHECK(compared > 100);

    // The refused image: failed with compact's one-line reason, its analysis kept, no output.
    const std::string reason = lines.at(unclean)["compact"]["error"];
    CHECK(reason.rfind("$LogFile says the volume was not shut down cleanly", 0) == 0);
    CHECK(lines.at(unclean)["error"] == "compact: " + reason);
    CHECK(
        test::db_integer(db,
                "SELECT count(*) FROM images i JOIN compactions c USING (image_id) WHERE i.path = ? AND "
                "i.status = 'failed' AND c.status = 'failed' AND c.granules_output IS NULL AND c.error = '" +
                    reason + "'",
                unclean) == 1);
    CHECK(test::db_integer(db, "SELECT count(*) FROM images i JOIN volumes v USING (image_id) WHERE i.path = ?",
                  unclean) == 1);

    SECTION("an existing output is never overwritten") {
        const std::uint64_t before = test::file_fingerprint(output);
        const auto again = test::run_cli(
            {"batch", image, "--db", db.string(), "--compact-to", compacted.string(), "--json", "--force"});
        CHECK(again.status == 2);
        CHECK(test::batch_json_lines(again.out).at(image)["error"] ==
              "compact: the output " + output.string() + " exists (it is not replaced)");
        CHECK(test::file_fingerprint(output) == before);
        CHECK(test::files_in(compacted).size() == 1);
    }
}

TEST_CASE("batch --compact-to: usage errors are refused before any image is read", "[batch][compact]") {
    const test::WorkDir work("batch-compact-usage");
    const std::string image = volume_with_holes(61).string();
    const std::string db = (work / "r.sqlite").string();
    const std::string dir = (work / "out").string();
    const auto status = [&](std::vector<std::string> extra) {
        std::vector<std::string> args{"batch", image, "--db", db};
        args.insert(args.end(), extra.begin(), extra.end());
        return test::run_cli(args).status;
    };
    CHECK(status({"--apply-to", dir, "--compact-to", dir}) == 1);
    CHECK(status({"--apply-to", dir, "--output-format", "vmdk"}) == 1);
    CHECK(status({"--granule", "1MiB"}) == 1);
    CHECK(status({"--no-pack"}) == 1);
    CHECK(status({"--no-verify"}) == 1);
    // A granule the format cannot allocate in (vmdk's grain is 64 KiB) fails the batch at once.
    const auto r = test::run_cli(
        {"batch", image, "--db", db, "--compact-to", dir, "--output-format", "vmdk", "--granule", "1MiB"});
    CHECK(r.status == 2);
    CHECK(r.err.find("64 KiB") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(!fs::exists(db));
}

TEST_CASE("a schema-5 results database is upgraded in place, keeps its rows, records and merges compactions",
          "[batch][compact][schema]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir work("batch-compact-schema");
    const fs::path image = work / "vm.img";
    fs::copy_file(volume_with_holes(62), image);
    const fs::path db = work / "old.sqlite";
    REQUIRE(test::run_cli({"batch", image.string(), "--db", db.string(), "--plan"}).status == 0);
    {
        // What schema 5 wrote: everything but the compactions table and the plan IO.
        batch::Database d(db.string(), false);
        d.exec("DROP TABLE compactions");
        test::drop_columns_after(d, 5);
        d.exec("PRAGMA user_version = 5");
    }
    { const batch::ResultsDb upgraded(db.string(), false); }
    CHECK(test::db_integer(db, "PRAGMA user_version") == batch::kSchemaVersion);
    CHECK(test::db_integer(db, "SELECT count(*) FROM plans") == 1);
    CHECK(test::db_integer(db, "SELECT count(*) FROM compactions") == 0);

    const fs::path compacted = work / "compacted";
    const auto r = test::run_cli({"batch", image.string(), "--db", db.string(), "--force", "--compact-to",
                                  compacted.string(), "--output-format", "qcow2", "--granule", "128KiB"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("compacted into " + (compacted / "vm.qcow2").string()) != std::string::npos);
    const fs::path output = compacted / "vm.qcow2";
    CHECK(test::db_integer(db,
                  "SELECT count(*) FROM compactions WHERE image_id = 2 AND status = 'ok' AND output_format = "
                  "'qcow2' AND granule_bytes = 131072 AND verified = 1") == 1);
    CHECK(test::db_integer(db, "SELECT host_bytes_output FROM compactions") == host_bytes(output));
    CHECK(test::run({"qemu-img", "check", "-f", "qcow2", output.string()}).status == 0);
    const auto info = test::run({"qemu-img", "info", "--output=json", output.string()});
    CHECK(Json::parse(info.out)["cluster-size"] == 131072);

    const fs::path merged = work / "merged.sqlite";
    REQUIRE(test::run_cli({"merge", merged.string(), db.string()}).status == 0);
    CHECK(test::db_integer(merged,
                  "SELECT count(*) FROM compactions c JOIN images i USING (image_id) WHERE i.path = ?",
                  image.string()) == 1);
    CHECK(test::db_integer(merged, "SELECT granules_output FROM compactions") ==
          test::db_integer(db, "SELECT granules_output FROM compactions"));
}

TEST_CASE("schedule --compact compacts under --rate as guestfrag compact does", "[schedule][compact]") {
    const test::WorkDir work("schedule-compact");
    const std::string image = volume_with_holes(62).string();
    // Packed at vmdk's 64 KiB grain: the raw output packed at the same granule is the disk
    // qemu-img converts, so every figure but the host bytes is the same.
    const fs::path reference = work / "reference.raw";
    const auto single =
        test::run_cli({"compact", image, "-o", reference.string(), "--granule", "64KiB", "--json"});
    INFO(single.err);
    REQUIRE(single.status == 0);
    const Json expected = Json::parse(single.out);

    // A start in the past and no windows: always open, nothing waits.
    const fs::path out = work / "out.vmdk";
    const auto r = test::run_cli({"schedule", "--compact", image, "-o", out.string(), "--output-format",
                                  "vmdk", "--rate", "1GiB/s", "--start", "2020-01-01T00:00Z", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    CHECK(doc["schema"] == "guestfrag.compact.v1");
    CHECK(doc["output_format"] == "vmdk");
    CHECK(doc["schedule"]["rate_bytes_per_second"] == 1073741824);
    CHECK(doc["schedule"]["windows"].empty());
    CHECK(doc["schedule"]["waits"].empty());
    CHECK(doc["granule_bytes"] == 65536);
    CHECK(doc["granules"] == expected["granules"]);
    CHECK(doc["data_bytes_output"] == expected["data_bytes_output"]);
    CHECK(doc["volumes"][0]["moves"] == expected["volumes"][0]["moves"]);
    CHECK(doc["host_bytes"]["output"] == host_bytes(out));
    CHECK(doc["host_bytes"]["input"] == expected["host_bytes"]["input"]);
    CHECK(doc["volumes"][0]["verification"]["streams_hashed"] ==
          expected["volumes"][0]["verification"]["streams_hashed"]);
    CHECK(test::run({"qemu-img", "check", "-f", "vmdk", out.string()}).status == 0);

    // Usage: exactly one of PLAN and --compact; --compact needs -o and --rate, and takes
    // neither --iops nor --max-per-window (its work is bytes, not moves known beforehand).
    const std::string o = (work / "x.raw").string();
    CHECK(test::run_cli({"schedule", "--compact", image, "--rate", "1MiB/s"}).status == 1);
    CHECK(test::run_cli({"schedule", "--compact", image, "-o", o}).status == 1);
    CHECK(test::run_cli({"schedule", "--compact", image, "-o", o, "--iops", "100"}).status == 1);
    CHECK(test::run_cli({"schedule", "--compact", image, "-o", o, "--rate", "1MiB/s", "--window",
                         "daily 01:00-02:00", "--max-per-window", "1GiB"})
              .status == 1);
    CHECK(test::run_cli({"schedule", "--rate", "1MiB/s"}).status == 1);
    CHECK(!fs::exists(o));
}

TEST_CASE("schedule --compact reads nothing before its window opens, and SIGINT while waiting leaves nothing",
          "[schedule][compact]") {
    const test::WorkDir work("schedule-compact-wait");
    const fs::path image = work / "vm.img";
    fs::copy_file(volume_with_holes(62), image);
    const fs::path out = work / "out.raw";
    const fs::path err = work / "err.txt";
    // Not before 2999: the compaction says how long it waits and waits there.
    const int pid = test::start_cli_until(
        {"schedule", "--compact", image.string(), "-o", out.string(), "--rate", "1GiB/s", "--start",
         "2999-01-01T00:00Z", "--window", "daily 01:00-02:00"},
        err, [&] {
            return test::file_contents(err).find("schedule: compaction waits until ") != std::string::npos;
        });
    REQUIRE(::kill(pid, SIGINT) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    const std::string said = test::file_contents(err);
    INFO(said);
    CHECK(said.find("interrupted: no output was written") != std::string::npos);
    // The window's first occurrence after the start, in local time.
    CHECK(said.find("waits until 2999-01-0") != std::string::npos);
    CHECK(test::files_in(work) == std::set<std::string>{"vm.img", "err.txt"});
}
