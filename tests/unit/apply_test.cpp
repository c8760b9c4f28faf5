// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag apply`: a plan carried out offline into a new disk, checked against The Sleuth
// Kit (contents and runlists), ntfsfix and guestfrag's own analysis; every refusal; and
// failures that must leave no output.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stop_token>

#include <nlohmann/json.hpp>

#include "core/apply/disk_copy.hpp"
#include "core/apply/mover.hpp"
#include "core/apply/volume_checks.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/pipeline.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/nbd_server.hpp"
#include "support/ntfs_edit.hpp"
#include "support/qemu_tools.hpp"
#include "support/tsk_oracle.hpp"
#include "support/vhd_writer.hpp"

using namespace guestfrag;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

MkImageOptions bare_disk(std::uint32_t seed) {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = "none";
    o.files = 300;
    o.seed = seed;
    return o;
}

fs::path bare_image() { return test::generated_image("apply-bare", bare_disk(31)); }
fs::path other_image() { return test::generated_image("apply-bare-other", bare_disk(32)); }
fs::path msdos_image() {
    MkImageOptions o = bare_disk(33);
    o.table = "msdos";
    return test::generated_image("apply-msdos", o);
}

/// `guestfrag plan --strategy defrag` of `image` into `out`.
fs::path make_plan(const fs::path& image, const fs::path& out) {
    const auto r = test::run_cli({"plan", image.string(), "--strategy", "defrag", "-o", out.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    return out;
}

/// Files in `dir` other than `keep`: a temporary disk left behind shows up here.
std::vector<std::string> leftovers(const fs::path& dir, const std::vector<std::string>& keep) {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
    }
    return out;
}

/// Runs apply (into a raw disk, or a qcow2 overlay of `image`) and checks everything the
/// output must be; returns the JSON document.
Json apply_and_prove(const fs::path& image, const std::string& name, const std::string& format = "raw") {
    test::require_tools({"icat", "fls", "istat"});
    const test::WorkDir dir(name);
    const fs::path plan_path = make_plan(image, dir / "p.json");
    const Json plan = Json::parse(test::file_contents(plan_path));
    REQUIRE(!plan["moves"].empty());
    const std::uint64_t fingerprint = test::file_fingerprint(image);
    const bool overlay = format == "qcow2";
    const fs::path applied = dir / (overlay ? "out.qcow2" : "out.img");

    const auto r = test::run_cli({"apply", image.string(), "--plan", plan_path.string(), "-o",
                                  applied.string(), "--output-format", format, "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);

    // The input is only read; the output is the whole disk, sparse (or the overlay of the
    // changed clusters), and nothing else is left.
    CHECK(test::file_fingerprint(image) == fingerprint);
    REQUIRE(fs::exists(applied));
    CHECK(leftovers(dir, {"p.json", applied.filename().string()}).empty());
    CHECK(doc["output_format"] == format);
    CHECK(doc["bytes_written"]["file"] == fs::file_size(applied));
    fs::path out = applied;
    if (overlay) {
        // TSK reads raw disks: the overlay over its backing file, flattened by qemu.
        test::require_tools({"qemu-img"});
        out = dir / "flat.img";
        test::run_ok({"qemu-img", "convert", "-f", "qcow2", "-O", "raw", applied.string(), out.string()});
        CHECK(doc["bytes_written"]["disk"].get<std::uint64_t>() % (64 * 1024) == 0);
        CHECK(fs::file_size(applied) < fs::file_size(image) / 2);
    } else {
        CHECK(fs::file_size(out) == fs::file_size(image));
        struct stat st {};
        REQUIRE(::stat(out.c_str(), &st) == 0);
        CHECK(static_cast<std::uint64_t>(st.st_blocks) * 512 < fs::file_size(out));
    }

    CHECK(doc["schema"] == "guestfrag.apply.v1");
    CHECK(doc["moves"]["planned"] == plan["moves"].size());
    CHECK(doc["moves"]["done"].get<std::size_t>() + doc["moves"]["skipped"].get<std::size_t>() ==
          plan["moves"].size());
    CHECK(doc["moves"]["done"].get<std::size_t>() > 0);
    CHECK(doc["verification"]["passed"] == true);
    // Fragments after: what the plan's summary promised when every move was done, what the
    // after-state of the moves done predicts otherwise.
    const std::uint64_t after = doc["verification"]["fragments_after"];
    CHECK(after == doc["verification"]["fragments_predicted"].get<std::uint64_t>());
    CHECK(doc["verification"]["fragments_before"] == plan["summary"]["fragments_before"]);
    if (doc["moves"]["skipped"] == 0) CHECK(after == plan["summary"]["fragments_after"].get<std::uint64_t>());
    CHECK(after < plan["summary"]["fragments_before"].get<std::uint64_t>());

    // The Sleuth Kit reads every file of the output as the input holds it.
    const OpenedImage opened_in = open_and_analyze(image.string());
    const std::uint64_t sector = opened_in.analysis->volumes.front().map.partition_offset / 512;
    // Every move of a plan made by `plan` is carried out.
    CHECK(doc["moves"]["skipped"] == 0);
    CHECK(doc["skipped_by_reason"].empty());
    CHECK(doc["verification"]["records"]["changed"].get<std::uint64_t>() > 0);

    const auto files_in = test::tsk_files(image, sector);
    const auto files_out = test::tsk_files(out, sector);
    CHECK(files_in == files_out);
    REQUIRE(files_in.size() > 100);
    const auto contents_in = test::tsk_contents(image, sector, files_in);
    const auto contents_out = test::tsk_contents(out, sector, files_out);
    REQUIRE(contents_in.size() == files_in.size());
    for (const auto& [path, contents] : contents_in) {
        INFO(path);
        // $MFT and $Bitmap record the moves: they are meant to differ.
        const bool records_moves = path == "$MFT" || path == "$Bitmap";
        CHECK((contents_out.at(path) == contents) != records_moves);
    }

    // TSK's runlists of the output are guestfrag's analysis of it (of the overlay itself,
    // through guestfrag's qcow2 reader and its backing file), and the plan's after-state.
    const OpenedImage opened_out = open_and_analyze(applied.string());
    const VolumeMap& map_out = opened_out.analysis->volumes.front().map;
    Plan adopted = read_plan(plan_path.string());
    std::vector<Move> done;
    for (std::size_t i = 0; i < adopted.moves.size(); ++i) {
        bool skipped = false;
        for (const auto& s : doc["skipped"]) skipped = skipped || s["move"] == i;
        if (!skipped) done.push_back(adopted.moves[i]);
    }
    adopted.moves = done;
    const VolumeMap predicted = apply_plan(opened_in.analysis->volumes.front().map, adopted);
    std::size_t compared = 0;
    // Streams the moves done touched (TSK is asked per record: a few ms each).
    std::set<std::uint64_t> moved_records;
    for (const Move& m : done) moved_records.insert(m.mft_record);
    for (const Stream& s : map_out.streams) {
        if (s.type != static_cast<std::uint32_t>(AttrType::Data) || moved_records.count(s.mft_record) == 0)
            continue;
        INFO("record " << s.mft_record << " " << s.label());
        const auto tsk = test::tsk_data_fragments(out, sector, s.mft_record);
        REQUIRE(tsk.count(std::string(s.name)) == 1);
        CHECK(tsk.at(std::string(s.name)) == test::fragments_of(s, map_out.cluster_size));
        const auto it = std::find_if(
            predicted.streams.begin(), predicted.streams.end(),
            [&](const Stream& p) { return p.mft_record == s.mft_record && p.label() == s.label(); });
        REQUIRE(it != predicted.streams.end());
        CHECK(test::fragments_of(*it, map_out.cluster_size) == test::fragments_of(s, map_out.cluster_size));
        ++compared;
    }
    CHECK(compared > 0);
    CHECK(map_out.free == predicted.free);
    return doc;
}

}  // namespace

TEST_CASE("apply: a defrag plan carried out on a bare volume is what TSK, ntfsfix and the plan say",
          "[apply]") {
    const Json doc = apply_and_prove(bare_image(), "apply-bare");
    (void)doc;
    // ntfsfix checks the output as a volume (bare: the file is the partition). Copy first:
    // ntfsfix opens read-write even with -n.
    test::require_tools({"ntfsfix"});
    const test::WorkDir dir("apply-ntfsfix");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    const fs::path out = dir / "out.img";
    REQUIRE(test::run_cli({"apply", bare_image().string(), "--plan", plan_path.string(), "-o", out.string()})
                .status == 0);
    const auto r = test::run({"ntfsfix", "-n", out.string()});
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.out.find("processed successfully") != std::string::npos);
}

TEST_CASE("apply: a volume inside an MBR partition is moved at its offset", "[apply]") {
    const Json doc = apply_and_prove(msdos_image(), "apply-msdos");
    CHECK(doc["partition"] == 1);
}

TEST_CASE("apply: text output summarises the moves and the verification", "[apply]") {
    const test::WorkDir dir("apply-text");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    const auto r = test::run_cli(
        {"apply", bare_image().string(), "--plan", plan_path.string(), "-o", (dir / "out.img").string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.rfind("applied ", 0) == 0);
    CHECK(r.out.find("verified: ") != std::string::npos);
}

namespace {

/// Runs apply on a copy of bare_image() mutated by `mutate`, with the plan of the original
/// (or of the copy when `plan_copy`), and returns the result; checks that it wrote nothing.
test::CommandResult refused(const std::string& name, const std::function<void(const fs::path&)>& mutate,
                            std::vector<std::string> extra = {}, bool plan_copy = false) {
    const test::WorkDir dir(name);
    const fs::path copy = dir / "in.img";
    fs::copy_file(bare_image(), copy);
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    if (mutate) mutate(copy);
    if (plan_copy) make_plan(copy, plan_path);
    const std::uint64_t fingerprint = test::file_fingerprint(copy);
    std::vector<std::string> args{
        "apply", copy.string(), "--plan", plan_path.string(), "-o", (dir / "out.img").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = test::run_cli(args);
    CHECK(test::file_fingerprint(copy) == fingerprint);
    if (r.status != 0) CHECK(leftovers(dir, {"in.img", "p.json"}).empty());
    return r;
}

void check_one_line(const test::CommandResult& r, const std::string& says) {
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("apply and compact accept the mirror Windows keeps at 128 KiB and 2 MiB clusters", "[apply][compact]") {
    // A mirror of one large cluster holds 128 or 2,048 records. Windows 10 keeps only the
    // system files' (0-15) in sync; past them the mirror keeps format-time copies. Both
    // commands compare what Windows and libntfs-3g compare, and prove their outputs so.
    test::require_tools({"ntfsfix"});
    for (const std::uint32_t cluster : {128u << 10, 2u << 20}) {
        INFO("cluster " << cluster);
        MkImageOptions o;
        o.table = "none";
        o.cluster_size = cluster;
        o.disk_size = std::uint64_t{cluster} * 1024;  // 128 MiB and 2 GiB
        o.files = 120;
        o.fill = 0.1;
        o.seed = 5;
        const test::WorkDir dir("apply-mirror-" + std::to_string(cluster));
        const fs::path image = dir / "in.img";
        fs::copy_file(test::generated_image("apply-mirror-" + std::to_string(cluster), o), image);
        for (const std::uint64_t record : {16u, 24u, 100u}) test::stale_mirror_record(image, record);
        const std::uint64_t fingerprint = test::file_fingerprint(image);

        const fs::path plan = dir / "p.json";
        REQUIRE(test::run_cli({"plan", image.string(), "--strategy", "optimize", "-o", plan.string()}).status == 0);
        const auto applied =
            test::run_cli({"apply", image.string(), "--plan", plan.string(), "-o", (dir / "a.img").string(), "--json"});
        INFO(applied.err);
        REQUIRE(applied.status == 0);
        const Json doc = Json::parse(applied.out);
        CHECK(doc["moves"]["done"].get<std::uint64_t>() > 0);
        CHECK(doc["moves"]["done"] == doc["moves"]["planned"]);
        CHECK(doc["verification"]["passed"] == true);
        const auto compacted = test::run_cli({"compact", image.string(), "-o", (dir / "c.img").string()});
        INFO(compacted.err);
        CHECK(compacted.status == 0);
        CHECK(test::file_fingerprint(image) == fingerprint);
        // libntfs-3g mounts the outputs (ntfsfix opens read-write even with -n: copies).
        for (const char* out : {"a.img", "c.img"}) {
            const auto fix = test::run({"ntfsfix", "-n", (dir / out).string()});
            INFO(out << ": " << fix.out << fix.err);
            CHECK(fix.out.find("processed successfully") != std::string::npos);
        }
        // A system file's record that differs is still refused.
        test::stale_mirror_record(image, 5);
        const auto stale = test::run_cli({"compact", image.string(), "-o", (dir / "r.img").string()});
        CHECK(stale.status == 2);
        CHECK(stale.err.find("$MFTMirr does not match") != std::string::npos);  // ours or libntfs-3g's words
    }
}

TEST_CASE("apply and compact hold the input as qemu does and refuse an image another process writes",
          "[apply][compact][lock]") {
    test::require_tools({"qemu-nbd", "qemu-io"});
    const test::WorkDir dir("apply-held");
    const fs::path image = dir / "in.img";
    fs::copy_file(bare_image(), image);
    const fs::path plan_path = make_plan(image, dir / "p.json");
    const std::vector<std::string> apply{"apply", image.string(), "--plan", plan_path.string(), "-o",
                                         (dir / "out.img").string()};

    SECTION("a qemu-nbd that serves the image writable holds qemu's write lock: refused, one line") {
        const test::NbdServer server("qemu-nbd", {"--format=raw", image.string()});
        for (const auto& args : {apply, std::vector<std::string>{"compact", image.string(), "-o",
                                                                 (dir / "out.img").string()}}) {
            const auto r = test::run_cli(args);
            check_one_line(r, image.string() + " is open for writing by another process");
            CHECK(leftovers(dir, {"in.img", "p.json"}).empty());
        }
        // analyze reads on, and says in one line that its figures may already be stale.
        const auto analysed = test::run_cli({"analyze", image.string()});
        CHECK(analysed.status == 0);
        CHECK(analysed.err == "guestfrag: warning: " + image.string() +
                                  " is open for writing by another process (it holds qemu's write lock): the "
                                  "figures may already be stale\n");
    }
    SECTION("while apply reads the image, qemu cannot open it for writing; readers can") {
        ApplyOptions options;
        options.output = (dir / "out.img").string();
        std::optional<test::CommandResult> writer;
        std::optional<test::CommandResult> reader;
        options.after_move = [&](std::size_t) {
            if (writer) return;
            writer = test::run({"qemu-io", "-f", "raw", "-c", "write 0 512", image.string()});
            reader = test::run({"qemu-img", "info", "-f", "raw", image.string()});
        };
        (void)apply_to_copy(image.string(), {}, read_plan(plan_path.string()), options);
        REQUIRE(writer);
        INFO(writer->out << writer->err);
        CHECK(writer->status != 0);
        CHECK((writer->out + writer->err).find("Failed to get \"write\" lock") != std::string::npos);
        CHECK(reader->status == 0);
        // Once apply is done, the lock is gone.
        CHECK(test::run({"qemu-io", "-f", "raw", "-c", "write 0 512", image.string()}).status == 0);
    }
    SECTION("an input written while apply ran (by a writer that takes no lock) is refused, nothing left") {
        ApplyOptions options;
        options.output = (dir / "out.img").string();
        bool written = false;
        options.after_move = [&](std::size_t) {
            if (written) return;
            // The same byte written back: the contents are unchanged, the file is not.
            std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
            const char c = static_cast<char>(f.get());
            f.seekp(0);
            f.put(c);
            written = true;
        };
        try {
            (void)apply_to_copy(image.string(), {}, read_plan(plan_path.string()), options);
            FAIL("apply finished on an input that changed");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Unsafe);
            CHECK(std::string(e.what()).find("the input changed while it was read") != std::string::npos);
            CHECK(std::string(e.what()).find("nothing was written") != std::string::npos);
        }
        CHECK(leftovers(dir, {"in.img", "p.json"}).empty());
    }
}

TEST_CASE("apply: refusals exit 2 with one line and write nothing", "[apply]") {
    SECTION("dirty") { check_one_line(refused("apply-dirty", test::mark_volume_dirty), "dirty"); }
    SECTION("hibernated") {
        const auto hibr = [](const fs::path& image) { test::add_hibernation_file(image); };
        check_one_line(refused("apply-hiber", hibr), "hibernated");
    }
    SECTION("resuming from hibernation (wake)") {
        // libntfs-3g's own check does not know "wake"; ours does.
        const auto wake = [](const fs::path& image) { test::add_hibernation_file(image, "wake"); };
        check_one_line(refused("apply-wake", wake), "hibernated");
    }
    SECTION("unclean $LogFile") {
        check_one_line(refused("apply-logfile", test::mark_logfile_unclean),
                       "$LogFile says the volume was not shut down cleanly");
    }
    SECTION("$MFTMirr differs from $MFT") {
        // A byte of $MFTMirr's copy of record 1 in the record's used part (its
        // $STANDARD_INFORMATION's creation time): the records below 16 are the ones Windows
        // keeps in sync. libntfs-3g's mount, in the analysis, compares the same records.
        const auto tamper = [](const fs::path& image) { test::stale_mirror_record(image, 1); };
        check_one_line(refused("apply-mirror", tamper), "$MFTMirr does not match $MFT (record 1)");
    }
    SECTION("a plan for another volume") {
        const test::WorkDir dir("apply-identity");
        const fs::path plan_path = make_plan(other_image(), dir / "p.json");
        const auto r = test::run_cli(
            {"apply", bare_image().string(), "--plan", plan_path.string(), "-o", (dir / "out.img").string()});
        check_one_line(r, "plan was made for another image");
        CHECK(leftovers(dir, {"p.json"}).empty());
    }
    SECTION("shadow copies, unless --allow-vss") {
        const auto vss = [](const fs::path& image) { test::add_shadow_copy_store(image, 64 * 1024); };
        const auto r_vss = refused("apply-vss", vss);
        check_one_line(r_vss, "bypasses the shadow copy driver's copy-on-write");
        // The store is named: what `vssadmin delete shadows` would remove.
        CHECK_THAT(r_vss.err,
                   Catch::Contains("(\\System Volume Information\\{5d7e2c1a-93b4-4e0f-8a61-2f0c9b7d4e13}"
                                   "{3808876b-c176-4e48-b7ae-04046e6cc752})"));
        const auto r = refused("apply-vss-allowed", vss, {"--allow-vss"}, true);
        INFO(r.err);
        CHECK(r.status == 0);
    }
    SECTION("the output is the input") {
        const test::WorkDir dir("apply-self");
        const fs::path copy = dir / "in.img";
        fs::copy_file(bare_image(), copy);
        const fs::path plan_path = make_plan(copy, dir / "p.json");
        const std::uint64_t fingerprint = test::file_fingerprint(copy);
        check_one_line(
            test::run_cli({"apply", copy.string(), "--plan", plan_path.string(), "-o", copy.string()}),
            "is the input image");
        CHECK(test::file_fingerprint(copy) == fingerprint);
    }
}

TEST_CASE("apply: an output that is not a regular file, or cannot be created, is refused before any work",
          "[apply][hostile]") {
    const test::WorkDir dir("apply-output-kind");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    const fs::path folder = dir / "out.d";
    fs::create_directory(folder);
    const fs::path fifo = dir / "out.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (const auto& [output, says] : std::vector<std::pair<std::string, std::string>>{
             {"/dev/null", "the output /dev/null is a character device, not a regular file"},
             {folder.string(), "the output " + folder.string() + " is a directory, not a regular file"},
             {fifo.string(), "the output " + fifo.string() + " is a FIFO, not a regular file"},
             {(dir / "missing" / "out.img").string(),
              "cannot create the output in " + (dir / "missing").string() + ": No such file or directory"}}) {
        INFO(output);
        for (const char* format : {"raw", "qcow2"}) {
            const auto r = test::run_cli({"apply", bare_image().string(), "--plan", plan_path.string(), "-o",
                                          output, "--output-format", format});
            check_one_line(r, says);
        }
    }
    CHECK(fs::is_character_file("/dev/null"));
    CHECK(fs::is_empty(folder));
    CHECK(fs::is_fifo(fifo));
    CHECK(leftovers(dir, {"p.json", "out.d", "out.fifo"}).empty());

    // schedule --apply refuses it at once, not when its first window opens.
    const auto scheduled = test::run_cli({"schedule", plan_path.string(), "--rate", "1MiB/s", "--window",
                                          "Mon-Sun 00:00-00:01", "--start", "2030-01-01T00:02Z", "--apply",
                                          bare_image().string(), "-o", folder.string()});
    check_one_line(scheduled, "is a directory, not a regular file");
}

TEST_CASE("apply: a host write that fails says why, with the output's path", "[apply][hostile]") {
    // The output's file system is full: the writes of the moves fail with ENOSPC. libntfs-3g
    // sees only EIO; the error keeps the host's words and the path.
    const test::WorkDir dir("apply-enospc");
    const fs::path copy = dir / "in.img";
    fs::copy_file(bare_image(), copy);
    const OpenedImage opened = open_and_analyze(copy.string());
    const VolumeMap& map = opened.analysis->volumes.front().map;
    const Plan plan = read_plan(make_plan(copy, dir / "p.json").string());
    REQUIRE(!plan.moves.empty());

    /// A raw file whose writes at or past `full` fail as on a full file system.
    class FullDisk final : public WritableDisk {
    public:
        FullDisk(WritableRawFile& file, std::uint64_t full) : file_(file), full_(full) {}
        [[nodiscard]] const std::string& path() const noexcept override { return file_.path(); }
        void read(std::uint64_t offset, std::span<std::byte> out) const override { file_.read(offset, out); }
        void write(std::uint64_t offset, std::span<const std::byte> bytes) override {
            if (offset + bytes.size() > full_) {
                errno = ENOSPC;
                throw Error(ErrorKind::Io, "cannot write " + file_.path() + " at offset " +
                                               std::to_string(offset) + ": " + std::strerror(errno));
            }
            file_.write(offset, bytes);
        }

    private:
        WritableRawFile& file_;
        std::uint64_t full_;
    };

    const int fd = ::open(copy.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    WritableRawFile file(fd, copy.string());
    const std::uint64_t first_destination =
        static_cast<std::uint64_t>(plan.moves.front().to_lcn) * map.cluster_size;
    FullDisk disk(file, first_destination);
    try {
        (void)carry_out_moves(disk, VolumeWindow{0, fs::file_size(copy)}, map, plan);
        FAIL("the moves wrote to a full disk");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Io);
        CHECK_THAT(e.what(), Catch::Contains("cannot write " + copy.string() + " at offset ") &&
                                 Catch::EndsWith(": No space left on device"));
    }
    ::close(fd);
}

namespace {

/// Inverts the byte at `offset` of the file at `path`: a corruption only a proof can see.
void flip_byte(const std::string& path, std::uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(~c));
    REQUIRE(f.good());
}

/// What apply_to_copy of `plan` on bare_image() says when its verification fails.
std::string verification_failure(const Plan& plan, const ApplyOptions& options) {
    try {
        (void)apply_to_copy(bare_image().string(), {}, plan, options);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Unfinished);
        return e.what();
    }
    FAIL("verification passed on a corrupted copy");
    return {};
}

}  // namespace

TEST_CASE("apply: a failed verification or an interrupt leaves no output", "[apply]") {
    const test::WorkDir dir("apply-fail");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    ApplyOptions options;
    options.output = (dir / "out.img").string();
    const Plan plan = read_plan(plan_path.string());
    const OpenedImage opened = open_and_analyze(bare_image().string());
    const std::uint32_t cs = opened.analysis->volumes.front().map.cluster_size;

    // Flips the first byte of the first file data a move was done on, where the new disk
    // holds it now (a directory index flipped would stop the mount before the check).
    std::optional<Move> moved;
    options.after_move = [&](std::size_t i) {
        if (!moved && plan.moves[i].stream == "$DATA") moved = plan.moves[i];
    };
    const auto flip_moved_data = [&](const std::string& temp) {
        REQUIRE(moved);
        const OpenedImage copy = open_and_analyze(temp);
        const VolumeMap& map = copy.analysis->volumes.front().map;
        const auto it = std::find_if(map.streams.begin(), map.streams.end(), [&](const Stream& s) {
            return s.mft_record == moved->mft_record && s.label() == moved->stream;
        });
        REQUIRE(it != map.streams.end());
        flip_byte(temp, static_cast<std::uint64_t>(it->extents.front().lcn) * cs);
    };
    // Flips the log sequence number (offset 8) of the first record past the system files
    // that no move names: no fixup covers it and no reader checks it, so only the
    // record-by-record comparison sees it.
    std::set<std::uint64_t> files_moved;
    for (const Move& m : plan.moves) files_moved.insert(m.mft_record);
    std::uint64_t record = 0;
    std::uint64_t last_record = 0;  // the last such record: the records are compared in two halves
    for (const FileEntry& f : opened.analysis->volumes.front().map.files)
        if (f.mft_record >= 24 && files_moved.count(f.mft_record) == 0) {
            if (record == 0) record = f.mft_record;
            last_record = f.mft_record;
        }
    REQUIRE(record != 0);
    REQUIRE(record < opened.analysis->volumes.front().map.mft_records_total / 2);
    REQUIRE(last_record >= opened.analysis->volumes.front().map.mft_records_total / 2);
    const auto flip_record = [&](const std::string& temp, std::uint64_t number) {
        const OpenedImage copy = open_and_analyze(temp);
        const VolumeMap& map = copy.analysis->volumes.front().map;
        const Stream& mft = map.streams.front();
        REQUIRE((mft.mft_record == 0 && mft.label() == "$DATA"));
        const std::uint64_t at = number * map.mft_record_size;
        std::uint64_t offset = 0;
        for (const Extent& e : mft.extents) {
            const std::uint64_t lo = static_cast<std::uint64_t>(e.vcn) * cs;
            if (at >= lo && at < lo + static_cast<std::uint64_t>(e.clusters) * cs)
                offset = static_cast<std::uint64_t>(e.lcn) * cs + (at - lo);
        }
        REQUIRE(offset != 0);
        flip_byte(temp, offset + 8);
    };
    const auto flip_untouched_record = [&](const std::string& temp) { flip_record(temp, record); };
    const auto changed = [](std::uint64_t r) {
        return "verification failed: MFT record " + std::to_string(r) +
               " changed, but it is no record of a file whose streams moved";
    };
    const std::string record_changed = changed(record);

    SECTION("a moved cluster changed after the move") {
        options.before_verify = flip_moved_data;
        const std::string failure = verification_failure(plan, options);
        REQUIRE(moved);
        CHECK(failure == "verification failed: the contents of record " + std::to_string(moved->mft_record) +
                             " " + moved->stream.str() + " differ from the input's");
    }
    SECTION("an MFT record of a file no move touched changed") {
        options.before_verify = flip_untouched_record;
        CHECK(verification_failure(plan, options) == record_changed);
    }
    SECTION("a record in the second half of the table changed, and one in the first: the first answers") {
        options.before_verify = [&](const std::string& temp) { flip_record(temp, last_record); };
        CHECK(verification_failure(plan, options) == changed(last_record));
        options.before_verify = [&](const std::string& temp) {
            flip_record(temp, last_record);
            flip_untouched_record(temp);
        };
        CHECK(verification_failure(plan, options) == record_changed);
    }
    SECTION("a record and a stream's contents changed: the record's proof answers, whichever ends first") {
        // The proofs of the records run beside the hashing (verify_copy).
        options.before_verify = [&](const std::string& temp) {
            flip_moved_data(temp);
            flip_untouched_record(temp);
        };
        CHECK(verification_failure(plan, options) == record_changed);
    }
    SECTION("interrupted after the first move") {
        std::stop_source stop;
        Progress progress;
        progress.stop = stop.get_token();
        std::size_t moves = 0;
        options.after_move = [&](std::size_t) {
            ++moves;
            stop.request_stop();
        };
        try {
            (void)apply_to_copy(bare_image().string(), {}, plan, options, progress);
            FAIL("apply finished despite the stop request");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Cancelled);
        }
        CHECK(moves == 1);
    }
    SECTION("interrupted after the first move, into a qcow2 overlay") {
        // The scratch file of the copy-on-write disk is unlinked from the start; the
        // overlay's temporary file goes with the error.
        std::stop_source stop;
        Progress progress;
        progress.stop = stop.get_token();
        options.output = (dir / "out.qcow2").string();
        options.format = ApplyOutputFormat::Qcow2;
        options.after_move = [&](std::size_t) { stop.request_stop(); };
        CHECK(test::kind_of([&] {
                  (void)apply_to_copy(bare_image().string(), {}, plan, options, progress);
              }) == ErrorKind::Cancelled);
    }
    CHECK(leftovers(dir, {"p.json"}).empty());
}

TEST_CASE("apply: $LogFile restart areas, clean and not", "[apply]") {
    std::string page(8192, '\xff');
    CHECK_FALSE(logfile_unclean_reason(page));  // empty: reset since the last clean shutdown
    auto restart = [&page](std::size_t at, std::uint64_t lsn, std::uint16_t in_use, std::uint16_t flags) {
        auto put = [&page](std::size_t pos, std::uint64_t v, int width) {
            for (int i = 0; i < width; ++i)
                page[pos + static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
        };
        page.replace(at, 4096, std::string(4096, '\0'));
        page.replace(at, 4, "RSTR");
        put(at + 24, 0x30, 2);
        put(at + 0x30, lsn, 8);
        put(at + 0x3c, in_use, 2);
        put(at + 0x3e, flags, 2);
    };
    restart(0, 100, 0, 0);
    restart(4096, 50, 0xffff, 0);
    REQUIRE(logfile_unclean_reason(page));  // the first page is the more recent: a client in use
    restart(4096, 200, 0xffff, 0);
    CHECK_FALSE(logfile_unclean_reason(page));  // now the second is, with no client in use
    restart(4096, 300, 0, 2);
    CHECK_FALSE(logfile_unclean_reason(page));  // a client in use, but RESTART_VOLUME_IS_CLEAN
    restart(4096, 300, 0, 0);
    CHECK(logfile_unclean_reason(page));
    std::string records(8192, '\0');
    records.replace(0, 4, "RCRD");
    CHECK(logfile_unclean_reason(records) == "$LogFile holds log records but no restart page");
}

namespace {

/// A volume large enough that apply is still at work when a test signals it.
fs::path signal_image() {
    MkImageOptions o = bare_disk(34);
    o.disk_size = 512ull << 20;
    o.files = 4000;
    return test::generated_image("apply-sigint", o);
}

}  // namespace

TEST_CASE("apply: SIGINT during the work exits 130 and leaves no output", "[apply]") {
    const fs::path image = signal_image();
    const test::WorkDir dir("apply-sigint");
    const fs::path plan_path = make_plan(image, dir / "p.json");
    const fs::path err_path = dir / "err.txt";
    const pid_t pid = test::start_cli_until_begun(
        {"apply", image.string(), "--plan", plan_path.string(), "-o", (dir / "out.img").string()},
        dir / "out.img", err_path);
    REQUIRE(::kill(pid, SIGINT) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const std::string err = test::file_contents(err_path);
    INFO(err);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(err.find("interrupted: no output was written") != std::string::npos);
    CHECK(leftovers(dir, {"p.json", "err.txt"}).empty());
}

TEST_CASE("apply: the temporary output of an apply killed by SIGKILL is removed by the next, which says so",
          "[apply][hostile]") {
    const fs::path image = signal_image();
    const test::WorkDir dir("apply-sigkill");
    const fs::path plan_path = make_plan(image, dir / "p.json");
    const fs::path out = dir / "out.img";
    const pid_t pid = test::start_cli_until_begun(
        {"apply", image.string(), "--plan", plan_path.string(), "-o", out.string()}, out, dir / "err.txt");
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const std::vector<std::string> left = leftovers(dir, {"p.json", "err.txt"});
    REQUIRE(left.size() == 1);
    // A temporary output of a process that is still running (this one) is left alone.
    const auto owned_by_us = [&] {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        std::string boot = test::file_contents("/proc/sys/kernel/random/boot_id");
        boot.erase(boot.find_last_not_of('\n') + 1);
        std::string stat = test::file_contents("/proc/self/stat");
        std::istringstream fields(stat.substr(stat.rfind(')') + 1));
        std::string field;
        for (int i = 3; i <= 22; ++i) fields >> field;
        return ".out.img.guestfrag-" + std::string(host) + "~" + boot + "~" + std::to_string(::getpid()) +
               "~" + field + ".AbCdEf";
    }();
    { std::ofstream(dir / owned_by_us) << "in use"; }

    const auto r = test::run_cli({"apply", image.string(), "--plan", plan_path.string(), "-o", out.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.find("guestfrag: warning: removed " + (dir / left.front()).string() +
                     ", left by an apply (process " + std::to_string(pid) +
                     ") that was killed before it finished\n") != std::string::npos);
    CHECK(leftovers(dir, {"p.json", "err.txt", "out.img"}) == std::vector<std::string>{owned_by_us});
}

TEST_CASE("apply --no-verify writes the moved disk and reports no verification", "[apply]") {
    const test::WorkDir dir("apply-no-verify");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    const fs::path out = dir / "out.img";
    const auto r = test::run_cli({"apply", bare_image().string(), "--plan", plan_path.string(), "-o",
                                  out.string(), "--no-verify", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    CHECK(doc["verification"].is_null());
    CHECK(doc["moves"]["done"].get<std::size_t>() > 0);
    // The same moves as a verified run: the output's allocation is what the plan predicts.
    const auto analysed = test::run_cli({"analyze", out.string(), "--json"});
    REQUIRE(analysed.status == 0);
    const auto verified = test::run_cli({"apply", bare_image().string(), "--plan", plan_path.string(), "-o",
                                         (dir / "verified.img").string(), "--json"});
    REQUIRE(verified.status == 0);
    CHECK(Json::parse(analysed.out)["volumes"][0]["files"]["fragments"] ==
          Json::parse(verified.out)["verification"]["fragments_after"]);
}

TEST_CASE("apply moves the streams of files with attribute lists, whose runlists span several records",
          "[apply]") {
    MkImageOptions o = bare_disk(7);
    o.disk_size = 128ull << 20;
    o.files = 800;
    const fs::path image = test::generated_image("apply-attribute-list", o);
    const Json doc = apply_and_prove(image, "apply-attribute-list");
    CHECK(doc["moves"]["skipped"] == 0);
    // Moved streams belong to files TSK shows with an $ATTRIBUTE_LIST (mkimage's pair).
    const test::WorkDir dir("apply-attribute-list-plan");
    const Plan plan = read_plan(make_plan(image, dir / "p.json").string());
    std::set<std::uint64_t> records;
    for (const Move& m : plan.moves) records.insert(m.mft_record);
    std::size_t with_list = 0;
    for (const std::uint64_t record : records) {
        const auto istat = test::run({"istat", image.string(), std::to_string(record)});
        REQUIRE(istat.status == 0);
        with_list += istat.out.find("Type: $ATTRIBUTE_LIST") != std::string::npos ? 1 : 0;
    }
    CHECK(with_list >= 1);
}

TEST_CASE(
    "apply --output-format qcow2: an overlay of the changed clusters that TSK, qemu-img and the plan accept",
    "[apply][qcow2]") {
    const Json doc = apply_and_prove(bare_image(), "apply-qcow2", "qcow2");
    CHECK(doc["moves"]["done"].get<std::size_t>() > 0);
}

namespace {

/// The 64 KiB clusters in which two raw files of the same size differ, as byte ranges.
ByteSet differing_clusters(const fs::path& a, const fs::path& b) {
    const std::string x = test::file_contents(a);
    const std::string y = test::file_contents(b);
    REQUIRE(x.size() == y.size());
    ByteSet out;
    constexpr std::size_t kCluster = 64 * 1024;
    for (std::size_t at = 0; at < x.size(); at += kCluster) {
        const std::size_t n = std::min(kCluster, x.size() - at);
        if (x.compare(at, n, y, at, n) != 0)
            out += boost::icl::interval<std::uint64_t>::right_open(at, at + n);
    }
    return out;
}

/// The guest disk `overlay` (qcow2) reads as, in raw form, through qemu-img.
std::string overlay_as_raw(const fs::path& overlay) {
    const fs::path out = fs::path(overlay).replace_extension(".as-raw");
    test::run_ok({"qemu-img", "convert", "-f", "qcow2", "-O", "raw", overlay.string(), out.string()});
    return test::file_contents(out);
}

/// Checks that the qcow2 overlay and the raw output of one plan are the same guest disk but
/// for the clusters the moves free: the raw output leaves those out of its copy (zeros), the
/// overlay reads them through to the input, as it stood. Compared sector by sector.
void check_same_disk(const std::string& overlay, const fs::path& raw_output, const std::string& input) {
    const std::string raw = test::file_contents(raw_output);
    REQUIRE(overlay.size() == raw.size());
    REQUIRE(input.size() == raw.size());
    constexpr std::size_t kSector = 512;
    std::size_t zeroed = 0;
    for (std::size_t at = 0; at < raw.size(); at += kSector) {
        if (overlay.compare(at, kSector, raw, at, kSector) == 0) continue;
        INFO("sector " << at / kSector);
        CHECK(raw.find_first_not_of('\0', at) >= at + kSector);
        CHECK(overlay.compare(at, kSector, input, at, kSector) == 0);
        ++zeroed;
    }
    CHECK(zeroed > 0);  // the plans here free clusters that held data
}

}  // namespace

TEST_CASE(
    "apply --output-format qcow2: qemu-img checks the overlay, reads it as the raw result and maps only "
    "the changed clusters into it",
    "[apply][qcow2]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("apply-qcow2-qemu");
    const fs::path input = dir / "in.img";
    fs::copy_file(msdos_image(), input);
    const fs::path plan_path = make_plan(input, dir / "p.json");
    const std::uint64_t fingerprint = test::file_fingerprint(input);
    fs::create_directory(dir / "sub");
    // Relative names, from the input's directory: qemu records the backing file relative to
    // the overlay's directory, and so does apply.
    const auto r =
        test::run({"sh", "-c",
                   "cd '" + dir.path().string() + "' && exec '" + GUESTFRAG_CLI +
                       "' apply in.img --plan p.json -o sub/out.qcow2 --output-format qcow2 --json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    const fs::path overlay = dir / "sub" / "out.qcow2";
    const fs::path raw = dir / "raw.img";
    REQUIRE(
        test::run_cli({"apply", input.string(), "--plan", plan_path.string(), "-o", raw.string()}).status ==
        0);
    CHECK(test::file_fingerprint(input) == fingerprint);
    CHECK(leftovers(dir / "sub", {"out.qcow2"}).empty());

    const auto info = test::run({"qemu-img", "info", "--output=json", overlay.string()});
    REQUIRE(info.status == 0);
    const Json header = Json::parse(info.out);
    CHECK(header["format"] == "qcow2");
    CHECK(header["format-specific"]["data"]["compat"] == "1.1");  // version 3
    CHECK(header["cluster-size"] == 65536);
    CHECK(header["virtual-size"] == fs::file_size(input));
    CHECK(header["backing-filename"] == "../in.img");
    CHECK(header["backing-filename-format"] == "raw");

    const auto check = test::run({"qemu-img", "check", "--output=json", overlay.string()});
    INFO(check.out << check.err);
    CHECK(check.status == 0);
    const Json checked = Json::parse(check.out);
    CHECK(checked["check-errors"] == 0);
    CHECK(!checked.contains("leaks"));
    CHECK(!checked.contains("corruptions"));

    const fs::path guest = dir / "sub" / "out.as-raw";
    check_same_disk(overlay_as_raw(overlay), raw, test::file_contents(input));

    // What the overlay itself stores (depth 0) is exactly the clusters the apply changed.
    ByteSet in_overlay;
    for (const test::QemuExtent& e : test::qemu_map(overlay, "qcow2"))
        if (e.depth == 0 && e.data)
            in_overlay += boost::icl::interval<std::uint64_t>::right_open(e.start, e.start + e.length);
    const ByteSet changed = differing_clusters(input, guest);
    CHECK(!changed.empty());
    CHECK(in_overlay == changed);
    CHECK(doc["bytes_written"]["disk"] == boost::icl::length(changed));
    // And guestfrag's own reader sees the same layers.
    const auto image = open_image(overlay.string());
    REQUIRE(image->layers().size() == 2);
    CHECK(image->layers()[0].allocated == changed);
}

TEST_CASE("apply --output-format qcow2 refuses another format and leaves no output on a failed verification",
          "[apply][qcow2]") {
    const test::WorkDir dir("apply-qcow2-fail");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    const auto r = test::run_cli({"apply", bare_image().string(), "--plan", plan_path.string(), "-o",
                                  (dir / "out.vmdk").string(), "--output-format", "vmdk"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("vmdk"));

    ApplyOptions options;
    options.output = (dir / "out.qcow2").string();
    options.format = ApplyOutputFormat::Qcow2;
    const Plan plan = read_plan(plan_path.string());
    {
        // A backing file name qemu cannot record (over 1023 bytes) is refused before anything is written.
        fs::path deep = dir.path();
        for (int i = 0; i < 5; ++i) deep /= std::string(220, static_cast<char>('a' + i));
        fs::create_directories(deep);
        fs::create_symlink(bare_image(), deep / "in.img");
        std::string message;
        CHECK(test::kind_of([&] { (void)apply_to_copy((deep / "in.img").string(), {}, plan, options); },
                            &message) == ErrorKind::Unsupported);
        CHECK_THAT(message, Catch::Contains("cannot be recorded in a qcow2 header"));
        CHECK(!fs::exists(dir / "out.qcow2"));
        fs::remove_all(dir / std::string(220, 'a'));
    }
    const std::uint32_t cs =
        open_and_analyze(bare_image().string()).analysis->volumes.front().map.cluster_size;
    std::optional<Move> moved;
    options.after_move = [&](std::size_t i) {
        if (!moved && plan.moves[i].stream == "$DATA") moved = plan.moves[i];
    };
    options.before_verify = [&](const std::string& temp) {
        // The first byte of the first move's destination (a bare volume: disk offset = LCN ·
        // cluster size), where the overlay file holds it: what the overlay holds is verified.
        REQUIRE(moved);
        const std::uint64_t at = static_cast<std::uint64_t>(moved->to_lcn) * cs;
        const auto overlay = open_image(temp);
        std::optional<std::uint64_t> in_file;
        for (const HostExtent& e : overlay->layers().front().host_extents)
            if (e.virtual_offset <= at && at < e.virtual_offset + e.length)
                in_file = e.file_offset + (at - e.virtual_offset);
        REQUIRE(in_file);
        std::fstream f(temp, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(static_cast<std::streamoff>(*in_file));
        const char c = static_cast<char>(f.get());
        f.seekp(static_cast<std::streamoff>(*in_file));
        f.put(static_cast<char>(~c));
        REQUIRE(f.good());
    };
    try {
        (void)apply_to_copy(bare_image().string(), {}, plan, options);
        FAIL("verification passed on a corrupted overlay");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Unfinished);
        CHECK(std::string(e.what()) == "verification failed: the contents of record " +
                                           std::to_string(moved->mft_record) + " " + moved->stream.str() +
                                           " differ from the input's");
    }
    CHECK(leftovers(dir, {"p.json"}).empty());
}

TEST_CASE("apply replays a saved plan without its summary, which plan --check computes after the rehearsal",
          "[apply]") {
    const test::WorkDir dir("apply-summary");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    const Plan saved = read_plan(plan_path.string());
    REQUIRE(saved.summary.moves > 0);
    // The volume is as it was planned: adopting the plan gives the summary `plan` saved.
    const OpenedImage opened = open_and_analyze(bare_image().string());
    CHECK(adopt_plan(opened, 0, saved).plan.summary == saved.summary);

    ApplyOptions options;
    options.output = (dir / "out.img").string();
    const ApplyResult r = apply_to_copy(bare_image().string(), {}, saved, options);
    CHECK(r.moves.done.size() == saved.moves.size());
    CHECK(r.plan.moves == saved.moves);
    CHECK(r.plan.summary == PlanSummary{});
    REQUIRE(r.verification);
}

TEST_CASE("apply --rate: parsed as a rate, refused otherwise, and every copied byte goes through the limiter",
          "[apply][rate]") {
    const test::WorkDir dir("apply-rate");
    const fs::path plan_path = make_plan(bare_image(), dir / "p.json");
    const auto apply_with = [&](const std::string& rate) {
        return test::run_cli({"apply", bare_image().string(), "--plan", plan_path.string(), "-o",
                              (dir / "out.img").string(), "--rate", rate});
    };
    for (const std::string bad : {"fast", "0", "10MiB/h"}) {
        INFO(bad);
        const auto r = apply_with(bad);
        CHECK(r.status == 1);
        CHECK_THAT(r.err, Catch::Contains("'" + bad + "' is not a rate"));
        CHECK(leftovers(dir, {"p.json"}).empty());
    }
    const auto fast = apply_with("4GiB/s");
    INFO(fast.err);
    CHECK(fast.status == 0);
    fs::remove(dir / "out.img");

    // An unlimited limiter counts what it is asked for: the raw copy reads once every byte
    // some layer stores outside the moves' sources and destinations and $MFT, and each
    // move's clusters (at its destination, in the same pass), then the part of $MFT the
    // moves did not write; the overlay its moves' clusters and each cluster it compares.
    const OpenedImage opened = open_and_analyze(bare_image().string());
    const std::uint64_t stored = boost::icl::length(opened.image->stored());
    const Plan plan = read_plan(plan_path.string());
    RateLimiter raw_limiter(0);
    ApplyOptions options;
    options.output = (dir / "out.img").string();
    options.limiter = &raw_limiter;
    const ApplyResult raw = apply_to_copy(bare_image().string(), {}, plan, options);
    CHECK(raw.moves.bytes_copied > 0);
    const VolumeMap& map = opened.analysis->volumes.front().map;
    const ByteSet mft = opened.image->stored() & mft_bytes(map);
    const std::uint64_t in_place =
        boost::icl::length(opened.image->stored() - moved_bytes(map, plan, &Move::from_lcn) -
                           moved_bytes(map, plan, &Move::to_lcn) - mft);
    // The moves rewrite some of $MFT's records, never its records of no file.
    CHECK(raw_limiter.requested() > in_place + raw.moves.bytes_copied);
    CHECK(raw_limiter.requested() < in_place + raw.moves.bytes_copied + boost::icl::length(mft));

    RateLimiter overlay_limiter(0);
    options.output = (dir / "out.qcow2").string();
    options.format = ApplyOutputFormat::Qcow2;
    options.limiter = &overlay_limiter;
    const ApplyResult overlay = apply_to_copy(bare_image().string(), {}, plan, options);
    CHECK(overlay.moves.bytes_copied == raw.moves.bytes_copied);
    // Every changed cluster was compared; unchanged written ones too, so at least as many.
    CHECK(overlay_limiter.requested() >= overlay.moves.bytes_copied + overlay.disk_bytes_written);
    CHECK(overlay_limiter.requested() < stored);
}

TEST_CASE("apply --output-format qcow2 over a qcow2 input records the backing format qcow2",
          "[apply][qcow2]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("apply-qcow2-on-qcow2");
    const fs::path input = dir / "in.qcow2";
    test::run_ok({"qemu-img", "convert", "-f", "raw", "-O", "qcow2", bare_image().string(), input.string()});
    const fs::path plan_path = make_plan(input, dir / "p.json");
    const std::uint64_t fingerprint = test::file_fingerprint(input);
    const fs::path overlay = dir / "out.qcow2";
    const auto r = test::run_cli({"apply", input.string(), "--plan", plan_path.string(), "-o",
                                  overlay.string(), "--output-format", "qcow2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(test::file_fingerprint(input) == fingerprint);
    const auto info = test::run({"qemu-img", "info", "--output=json", overlay.string()});
    REQUIRE(info.status == 0);
    const Json header = Json::parse(info.out);
    CHECK(header["backing-filename"] == input.string());  // given absolute: recorded as given
    CHECK(header["backing-filename-format"] == "qcow2");
    CHECK(test::run({"qemu-img", "check", overlay.string()}).status == 0);
    const fs::path raw = dir / "raw.img";
    REQUIRE(test::run_cli({"apply", bare_image().string(), "--plan", plan_path.string(), "-o", raw.string()})
                .status == 0);
    check_same_disk(overlay_as_raw(overlay), raw, test::file_contents(bare_image()));
}

TEST_CASE("apply prints the input's layer warnings as analyze does", "[apply][qcow2]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("apply-warnings");
    // A fixed VHD whose footer claims 16 MiB more than the file holds, all past the volume.
    const fs::path vhd = dir / "cut.vhd";
    fs::copy_file(msdos_image(), vhd);
    const std::uint64_t present = fs::file_size(vhd);
    test::append_fixed_vhd_footer(vhd, present + (16ull << 20));
    const fs::path plan_path = make_plan(vhd, dir / "p.json");
    const auto analysed = test::run_cli({"analyze", vhd.string()});
    REQUIRE(analysed.status == 0);
    REQUIRE(analysed.err.rfind("guestfrag: warning: " + vhd.string() + ": fixed vhd is truncated", 0) == 0);

    // The overlay needs only the bytes the moves touch; its backing file is a VHD ("vpc").
    const fs::path overlay = dir / "out.qcow2";
    const auto r = test::run_cli({"apply", vhd.string(), "--plan", plan_path.string(), "-o", overlay.string(),
                                  "--output-format", "qcow2", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err == analysed.err);
    CHECK(Json::parse(r.out)["verification"]["passed"] == true);
    const auto info = test::run({"qemu-img", "info", "--output=json", overlay.string()});
    REQUIRE(info.status == 0);
    CHECK(Json::parse(info.out)["backing-filename-format"] == "vpc");
    CHECK(Json::parse(info.out)["virtual-size"] == present + (16ull << 20));

    // A raw output copies the whole disk, missing bytes included: refused at the copy's first
    // read past the data (128 KiB), with the way out.
    const fs::path raw = dir / "out.img";
    const auto refused =
        test::run_cli({"apply", vhd.string(), "--plan", plan_path.string(), "-o", raw.string()});
    CHECK(refused.status == 2);
    CHECK(refused.err ==
          "guestfrag: error: " + vhd.string() +
              ": a raw output is a copy of the whole disk, which cannot be read: vhd: the file is "
              "truncated: disk bytes " +
              std::to_string(present) + " to " + std::to_string(present + (128ull << 10)) +
              " are needed, but its data ends at " + std::to_string(present) +
              "; --output-format qcow2 needs only what the moves touch\n");
    CHECK(leftovers(dir, {"cut.vhd", "p.json", "out.qcow2"}).empty());

    // impact --deep reads the whole disk too: the missing bytes are the image's fault, not
    // the plan's, which fits the volume (without --deep, impact reads no data and works).
    CHECK(test::run_cli({"impact", vhd.string(), "--plan", plan_path.string()}).status == 0);
    const auto deep = test::run_cli({"impact", vhd.string(), "--plan", plan_path.string(), "--deep"});
    CHECK(deep.status == 2);
    CHECK(deep.err.find("guestfrag: error: " + vhd.string() + ": vhd: the file is truncated") !=
          std::string::npos);
}

TEST_CASE("apply skips every move of an encrypted (EFS) stream, and the rest still replays and verifies",
          "[apply][skip]") {
    const test::WorkDir dir("apply-efs");
    // A record one of whose moves is done on the volume as generated.
    const Plan original = read_plan(make_plan(bare_image(), dir / "original.json").string());
    ApplyOptions options;
    options.output = (dir / "probe.img").string();
    options.verify = false;
    const ApplyResult probe = apply_to_copy(bare_image().string(), {}, original, options);
    // The first file whose data a move was done on (EFS marks a file's $DATA).
    const auto data_move = std::ranges::find_if(
        probe.moves.done, [&](std::size_t i) { return original.moves[i].stream == "$DATA"; });
    REQUIRE(data_move != probe.moves.done.end());
    const std::uint64_t record = original.moves[*data_move].mft_record;
    fs::remove(dir / "probe.img");

    const fs::path copy = dir / "in.img";
    fs::copy_file(bare_image(), copy);
    test::mark_data_encrypted(copy, record);
    const fs::path plan_path = make_plan(copy, dir / "p.json");
    const Plan plan = read_plan(plan_path.string());
    const std::uint64_t fingerprint = test::file_fingerprint(copy);
    const auto r = test::run_cli(
        {"apply", copy.string(), "--plan", plan_path.string(), "-o", (dir / "out.img").string(), "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(test::file_fingerprint(copy) == fingerprint);
    const Json doc = Json::parse(r.out);
    CHECK(doc["verification"]["passed"] == true);
    CHECK(doc["moves"]["done"].get<std::size_t>() > 0);
    std::size_t of_record = 0;
    for (const Move& m : plan.moves) of_record += m.mft_record == record && m.stream == "$DATA" ? 1 : 0;
    REQUIRE(of_record > 0);
    std::size_t encrypted = 0;
    std::string reasons;
    for (const auto& s : doc["skipped"])
        if (s["mft_record"] == record) reasons += s["reason"].get<std::string>() + "; ";
    INFO("record " << record << ": " << reasons);
    for (const auto& s : doc["skipped"]) {
        if (s["reason"] != "encrypted stream") continue;
        CHECK(s["mft_record"] == record);
        CHECK(s["stream"] == "$DATA");
        ++encrypted;
    }
    CHECK(encrypted == of_record);
    CHECK(doc["skipped_by_reason"]["encrypted stream"] == of_record);
}

namespace {

/// Runs `plan`'s moves with the mover itself, on a copy of `image` (a bare volume) analysed as
/// `map`, and returns the reason it gave for skipping the only move; checks it wrote nothing.
std::string skipped_by_mover(const fs::path& image, const VolumeMap& map, const Plan& plan,
                             const std::string& name) {
    const test::WorkDir dir(name);
    const fs::path copy = dir / "in.img";
    fs::copy_file(image, copy);
    const std::uint64_t fingerprint = test::file_fingerprint(copy);
    const int fd = ::open(copy.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    MoveOutcome outcome;
    {
        WritableRawFile disk(fd, copy.string());
        outcome = carry_out_moves(disk, VolumeWindow{0, fs::file_size(copy)}, map, plan);
    }
    ::close(fd);
    CHECK(outcome.done.empty());
    CHECK(outcome.bytes_copied == 0);
    CHECK(test::file_fingerprint(copy) == fingerprint);
    REQUIRE(outcome.skipped.size() == 1);
    return outcome.skipped[0].reason;
}

}  // namespace

TEST_CASE("apply moves a sparse stream only in whole compression units", "[apply][skip]") {
    const OpenedImage opened = open_and_analyze(bare_image().string());
    const VolumeMap& map = opened.analysis->volumes.front().map;
    // mkimage's sparse file: data, a hole, data, in runs of whole compression units.
    const auto sparse = std::find_if(map.streams.begin(), map.streams.end(), [](const Stream& s) {
        return (s.flags & Stream::kSparse) != 0 && s.label() == "$DATA";
    });
    REQUIRE(sparse != map.streams.end());
    const Extent& first = sparse->extents.front();
    REQUIRE(first.lcn >= 0);
    REQUIRE(first.clusters == 16);
    // A free run for the destination, far from the source.
    std::optional<std::int64_t> to;
    for (const auto& run : map.free)
        if (!to && run.upper() - run.lower() >= 16) to = run.lower();
    REQUIRE(to);

    const test::WorkDir dir("apply-sparse-unit");
    Plan plan = read_plan(make_plan(bare_image(), dir / "p.json").string());
    ApplyOptions options;
    options.output = (dir / "out.img").string();
    SECTION("half a compression unit: the plan is refused, and the mover would skip it") {
        plan.moves = {Move{sparse->mft_record, "$DATA", 0, first.lcn, *to, 8}};
        CHECK_THROWS_WITH(apply_plan(map, plan),
                          Catch::Contains("move 0: record " + std::to_string(sparse->mft_record) +
                                          " $DATA is compressed or sparse and these moves leave part of its "
                                          "compression unit of 16 clusters at VCN 0 behind"));
        CHECK(skipped_by_mover(bare_image(), map, plan, "apply-sparse-unit-mover") ==
              "compressed or sparse stream moved in pieces that leave part of its compression unit of 16 "
              "clusters "
              "behind");
    }
    SECTION("a whole unit is moved and verified") {
        plan.moves = {Move{sparse->mft_record, "$DATA", 0, first.lcn, *to, 16}};
        const ApplyResult r = apply_to_copy(bare_image().string(), {}, plan, options);
        CHECK(r.moves.skipped.empty());
        CHECK(r.moves.done.size() == 1);
        CHECK(r.moves.bytes_copied == 16ull * map.cluster_size);
        REQUIRE(r.verification);
        const OpenedImage out = open_and_analyze(options.output);
        const auto& streams = out.analysis->volumes.front().map.streams;
        const auto moved = std::find_if(streams.begin(), streams.end(), [&](const Stream& s) {
            return s.mft_record == sparse->mft_record && s.label() == "$DATA";
        });
        REQUIRE(moved != streams.end());
        CHECK(moved->extents.front() == Extent{0, *to, 16});
    }
}

TEST_CASE("apply moves a compressed stream only in whole compression units", "[apply][skip]") {
    const test::WorkDir dir("apply-compressed-unit");
    const fs::path copy = dir / "in.img";
    fs::copy_file(bare_image(), copy);
    const std::uint64_t record = test::add_compressed_file(copy, "Packed", "random.bin", 48 * 4096);
    const OpenedImage opened = open_and_analyze(copy.string());
    const VolumeMap& map = opened.analysis->volumes.front().map;
    const auto stream = std::find_if(map.streams.begin(), map.streams.end(), [&](const Stream& s) {
        return s.mft_record == record && s.label() == "$DATA";
    });
    REQUIRE(stream != map.streams.end());
    REQUIRE((stream->flags & Stream::kCompressed) != 0);
    const Extent& first = stream->extents.front();
    INFO("first run: LCN " << first.lcn << ", " << first.clusters << " clusters");
    REQUIRE(first.lcn >= 0);
    REQUIRE(first.clusters >= 16);
    std::optional<std::int64_t> to;
    for (const auto& run : map.free)
        if (!to && run.upper() - run.lower() >= 16) to = run.lower();
    REQUIRE(to);

    Plan plan = read_plan(make_plan(copy, dir / "p.json").string());
    ApplyOptions options;
    options.output = (dir / "out.img").string();
    SECTION("a piece that cuts a unit: the plan is refused, and the mover would skip it") {
        plan.moves = {Move{record, "$DATA", 8, first.lcn + 8, *to, 8}};
        CHECK_THROWS_WITH(apply_plan(map, plan),
                          Catch::Contains("compression unit of 16 clusters at VCN 0 behind"));
        CHECK(skipped_by_mover(copy, map, plan, "apply-compressed-unit-mover") ==
              "compressed or sparse stream moved in pieces that leave part of its compression unit of 16 "
              "clusters "
              "behind");
    }
    SECTION("a whole unit is moved, and TSK reads the file as before") {
        test::require_tools({"icat"});
        plan.moves = {Move{record, "$DATA", 0, first.lcn, *to, 16}};
        const ApplyResult r = apply_to_copy(copy.string(), {}, plan, options);
        CHECK(r.moves.done.size() == 1);
        REQUIRE(r.verification);
        CHECK(test::tsk_icat(options.output, 0, std::to_string(record)) ==
              test::tsk_icat(copy, 0, std::to_string(record)));
        CHECK(test::tsk_icat(copy, 0, std::to_string(record)).size() == 48 * 4096);
    }
}

TEST_CASE("the mover skips a move of a resident stream and writes nothing", "[apply][skip]") {
    // A valid plan cannot name a resident stream (the analysis lists non-resident streams
    // only), so the mover is given a map that says otherwise, as a stale one could: the
    // record's resident $DATA listed with a run of one cluster.
    const test::WorkDir dir("apply-resident");
    const fs::path copy = dir / "in.img";
    fs::copy_file(bare_image(), copy);
    const std::uint64_t record = test::add_file(copy, "tiny.txt", 100);
    const OpenedImage opened = open_and_analyze(copy.string());
    VolumeMap before = opened.analysis->volumes.front().map;
    const auto of_record = [&](const Stream& s) { return s.mft_record == record; };
    REQUIRE(std::none_of(before.streams.begin(), before.streams.end(), of_record));
    // Two free clusters: neither is read or written, as nothing is moved.
    REQUIRE(before.free.iterative_size() >= 2);
    const std::int64_t from = before.free.begin()->lower();
    const std::int64_t to = std::next(before.free.begin())->lower();
    Stream resident;
    resident.mft_record = record;
    resident.type = static_cast<std::uint32_t>(AttrType::Data);
    resident.size = 100;
    resident.allocated_size = before.cluster_size;
    resident.extents = {Extent{0, from, 1}};
    // find_stream searches the streams by record: keep them in record order.
    before.streams.insert(std::upper_bound(before.streams.begin(), before.streams.end(), record,
                                           [](std::uint64_t r, const Stream& s) { return r < s.mft_record; }),
                          resident);
    Plan plan;
    plan.moves = {Move{record, "$DATA", 0, from, to, 1}};
    CHECK(skipped_by_mover(copy, before, plan, "apply-resident-mover") == "resident stream");
}

TEST_CASE(
    "apply refuses a plan its rehearsal would not carry out, stops the copy beside it, and leaves "
    "nothing",
    "[apply][skip]") {
    // The rehearsal runs beside the copy (docs/apply.md, step 3). A move that splits an
    // encrypted file's one run gains it a fragment, so the rehearsal carries it out, and the
    // mover skips encrypted streams: the plan is refused. The copy is limited to 128 KiB/s,
    // over a minute for this disk, so a refusal that did not stop it would show in what it
    // asked the limiter for.
    const test::WorkDir dir("apply-rehearsal-refuses");
    const fs::path copy = dir / "in.img";
    fs::copy_file(bare_image(), copy);
    const auto one_run = [](const VolumeMap& map) {
        return std::ranges::find_if(map.streams, [](const Stream& s) {
            return s.mft_record >= 16 && s.type == static_cast<std::uint32_t>(AttrType::Data) &&
                   s.name.empty() && s.extents.size() == 1 && s.extents[0].clusters >= 2;
        });
    };
    std::uint64_t record = 0;
    {
        const OpenedImage opened = open_and_analyze(copy.string());
        const auto stream = one_run(opened.analysis->volumes.front().map);
        REQUIRE(stream != opened.analysis->volumes.front().map.streams.end());
        record = stream->mft_record;
    }
    test::mark_data_encrypted(copy, record);
    Plan plan = read_plan(make_plan(copy, dir / "p.json").string());  // the volume's identity
    const OpenedImage opened = open_and_analyze(copy.string());
    const VolumeMap& map = opened.analysis->volumes.front().map;
    const auto stream = std::ranges::find_if(
        map.streams, [&](const Stream& s) { return s.mft_record == record && s.extents.size() == 1; });
    REQUIRE(stream != map.streams.end());
    REQUIRE(!map.free.empty());
    plan.moves = {Move{record, "$DATA", 0, stream->extents[0].lcn, map.free.begin()->lower(), 1}};

    ApplyOptions options;
    options.output = (dir / "out.img").string();
    RateLimiter limiter(128 << 10);
    options.limiter = &limiter;
    try {
        (void)apply_to_copy(copy.string(), {}, plan, options);
        FAIL("the plan was applied");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Corrupt);
        CHECK_THAT(e.what(), Catch::Contains("apply would not carry out move 1 of the plan (record " +
                                             std::to_string(record) + " $DATA): encrypted stream"));
    }
    CHECK(limiter.requested() < boost::icl::length(opened.image->stored()) / 2);
    CHECK(leftovers(dir, {"in.img", "p.json"}).empty());
}
