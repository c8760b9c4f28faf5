// SPDX-License-Identifier: GPL-2.0-or-later
// guestfrag mkimage: the generated disks must be what other tools (The Sleuth Kit, ntfsfix)
// read as fragmented NTFS, and the same options must give the same population.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stop_token>

#include "analyzers/analysis.hpp"
#include "app/mkimage/layout.hpp"
#include "app/mkimage/layout_ini.hpp"
#include "app/mkimage/mkimage.hpp"
#include "app/mkimage/ntfs_writer.hpp"
#include "app/mkimage/population.hpp"
#include "core/error.hpp"
#include "core/estimate/layout_ini.hpp"
#include "core/estimate/trace_source.hpp"
#include "core/image/open_image.hpp"
#include "core/image/unique_fd.hpp"
#include "core/image/writable_raw_file.hpp"
#include "support/fixtures.hpp"
#include "support/tsk_oracle.hpp"

namespace fs = std::filesystem;
using guestfrag::Error;
using guestfrag::ErrorKind;
using guestfrag::MkImageOptions;
using guestfrag::MkImageSummary;
using guestfrag::test::run;

namespace {

void require_tsk() { guestfrag::test::require_tools({"mmls", "fsstat", "fls", "istat", "icat"}); }

/// A disk generated for one test process and removed afterwards; carries the summary,
/// which generated_image's cache cannot provide.
struct Generated {
    fs::path path;
    MkImageSummary summary;

    Generated(const std::string& key, MkImageOptions options) {
        path = guestfrag::test::scratch_dir() / (key + "." + std::to_string(::getpid()) + ".img");
        options.output = path;
        summary = guestfrag::make_image(options);
    }
    ~Generated() { fs::remove(path); }
    Generated(const Generated&) = delete;
    Generated& operator=(const Generated&) = delete;
};

MkImageOptions small(const std::string& table = "msdos") {
    MkImageOptions o;
    o.disk_size = 64ull << 20;
    o.files = 500;
    o.table = table;
    return o;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

/// Paths of live regular files in `fls -r -p` output: no deleted entries, no named streams
/// ("file:stream"), no NTFS metadata files ("$MFT", "$Extend/...").
std::vector<std::string> live_files(const std::string& fls_output) {
    std::vector<std::string> files;
    for (const auto& line : lines(fls_output)) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos || !line.starts_with("r/r ") || line.find('*') < tab) continue;
        const std::string path = line.substr(tab + 1);
        if (path.starts_with("$") || path.find(':') != std::string::npos) continue;
        files.push_back(path);
    }
    return files;
}

std::vector<std::string> tsk(const std::string& tool, const fs::path& image,
                             const std::vector<std::string>& args, std::uint64_t offset_sectors = 2048) {
    std::vector<std::string> argv{tool};
    if (offset_sectors != 0) {
        argv.push_back("-o");
        argv.push_back(std::to_string(offset_sectors));
    }
    if (tool == "fls") argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(image.string());
    if (tool != "fls") argv.insert(argv.end(), args.begin(), args.end());
    const auto r = run(argv);
    INFO(tool << ": " << r.err);
    REQUIRE(r.status == 0);
    return lines(r.out);
}

std::string joined(const std::vector<std::string>& text) {
    std::string all;
    for (const auto& l : text) all += l + "\n";
    return all;
}

/// Cluster numbers istat lists for the unnamed $DATA attribute (0 = sparse).
std::vector<std::uint64_t> data_clusters(const std::vector<std::string>& istat) {
    std::vector<std::uint64_t> clusters;
    bool in_data = false;
    for (const auto& line : istat) {
        if (line.starts_with("Type: ")) {
            in_data = line.starts_with("Type: $DATA (128-") && line.find("Name: N/A") != std::string::npos;
            continue;
        }
        if (!in_data) continue;
        if (line.find_first_not_of("0123456789 ") != std::string::npos || line.empty()) {
            in_data = false;
            continue;
        }
        std::istringstream in(line);
        for (std::uint64_t c = 0; in >> c;) clusters.push_back(c);
    }
    return clusters;
}

/// Fragments as docs/design.md §3 counts them: contiguous clusters merged, sparse clusters skipped.
std::size_t fragments(const std::vector<std::uint64_t>& clusters) {
    std::size_t n = 0;
    std::uint64_t next = 0;
    for (const auto c : clusters) {
        if (c == 0) continue;
        if (n == 0 || c != next) ++n;
        next = c + 1;
    }
    return n;
}

/// `ifind -n PATH`: the MFT record The Sleuth Kit finds at `path` ("dir/file"), "" when none.
std::string ifind(const fs::path& image, const std::string& path, std::uint64_t offset_sectors = 2048) {
    const auto r = run({"ifind", "-o", std::to_string(offset_sectors), "-n", path, image.string()});
    if (r.status != 0 || r.out.find_first_not_of("0123456789-\n") != std::string::npos) return {};
    return r.out.substr(0, r.out.find_first_of("-\n"));
}

/// The lines of a Layout.ini as Windows writes it: byte-order mark FF FE, UTF-16LE, every line
/// ended by CR LF. Generated paths are ASCII, so a unit above 0x7F fails the test.
std::vector<std::string> layout_ini_lines(const std::string& bytes) {
    REQUIRE(bytes.size() >= 2);
    REQUIRE(bytes.substr(0, 2) == "\xFF\xFE");
    REQUIRE(bytes.size() % 2 == 0);
    std::string text;
    for (std::size_t i = 2; i < bytes.size(); i += 2) {
        const auto low = static_cast<unsigned char>(bytes[i]);
        REQUIRE(bytes[i + 1] == '\0');
        REQUIRE(low > 0);
        REQUIRE(low < 0x80);
        text += static_cast<char>(low);
    }
    REQUIRE(text.ends_with("\r\n"));
    std::vector<std::string> out;
    for (std::size_t at = 0; at < text.size();) {
        const auto end = text.find("\r\n", at);
        const std::string line = text.substr(at, end - at);
        REQUIRE(line.find('\n') == std::string::npos);  // no bare LF: CR LF only
        out.push_back(line);
        at = end + 2;
    }
    return out;
}

/// `fls -r -p` lines of live regular files, "r/r 64-128-2:\tpath", by path.
std::map<std::string, std::string> live_entries(const std::vector<std::string>& fls) {
    std::map<std::string, std::string> entries;
    for (const auto& line : fls) {
        const auto tab = line.find('\t');
        if (tab == std::string::npos || !line.starts_with("r/r ") || line.find('*') < tab) continue;
        entries[line.substr(tab + 1)] = line;
    }
    return entries;
}

}  // namespace

TEST_CASE("mkimage: an msdos disk that The Sleuth Kit reads as fragmented NTFS", "[mkimage]") {
    require_tsk();
    const Generated disk("mkimage-msdos", small());
    const MkImageSummary& s = disk.summary;

    SECTION("summary") {
        CHECK(s.files_created == 500);
        CHECK(s.files_deleted == 100);
        CHECK(s.files_kept == 400);
        CHECK_FALSE(s.volume_full);
        CHECK(s.directories == 8);
        CHECK(s.partition_offset == 1u << 20);
        CHECK(s.partition_length == (64u << 20) - (1u << 20));
    }
    SECTION("the file is sparse") {
        struct stat st {};
        REQUIRE(::stat(disk.path.c_str(), &st) == 0);
        CHECK(st.st_size == 64 << 20);
        CHECK(static_cast<std::uint64_t>(st.st_blocks) * 512 < static_cast<std::uint64_t>(st.st_size));
    }
    SECTION("partition table and file system") {
        const std::string mmls = joined(tsk("mmls", disk.path, {}, 0));
        CHECK(mmls.find("0000002048   0000131071   0000129024   NTFS / exFAT (0x07)") != std::string::npos);
        const std::string fsstat = joined(tsk("fsstat", disk.path, {}));
        CHECK(fsstat.find("File System Type: NTFS") != std::string::npos);
        CHECK(fsstat.find("Volume Name: guestfrag") != std::string::npos);
        CHECK(fsstat.find("Cluster Size: 4096") != std::string::npos);
    }
    SECTION("every kept file is listed, nested up to 3 directories deep") {
        const auto files = live_files(joined(tsk("fls", disk.path, {"-r", "-p"})));
        CHECK(files.size() == s.files_kept);
        std::size_t deepest = 0;
        for (const auto& f : files)
            deepest = std::max<std::size_t>(deepest, std::count(f.begin(), f.end(), '/'));
        CHECK(deepest >= 2);
        CHECK(deepest <= 3);
    }
    SECTION("fragmented files have several runs and real data") {
        REQUIRE(s.fragmented_files > 10);
        REQUIRE_FALSE(s.fragmented_records.empty());
        for (const auto record : s.fragmented_records) {
            INFO("record " << record);
            CHECK(fragments(data_clusters(tsk("istat", disk.path, {std::to_string(record)}))) > 1);
        }
        const auto r =
            run({"icat", "-o", "2048", disk.path.string(), std::to_string(s.fragmented_records.front())});
        REQUIRE(r.status == 0);
        CHECK(r.out.substr(0, 4) == "GFRG");
        CHECK(std::count(r.out.begin(), r.out.end(), '\0') < static_cast<std::ptrdiff_t>(r.out.size() / 16));
    }
    SECTION("runlists spill into extension records behind an $ATTRIBUTE_LIST") {
        REQUIRE(s.attribute_list_records.size() >= 2);
        const auto istat = tsk("istat", disk.path, {std::to_string(s.attribute_list_records.front())});
        const std::string text = joined(istat);
        CHECK(text.find("$ATTRIBUTE_LIST") != std::string::npos);
        // Attribute-list entries name the $DATA extents held in other MFT records.
        std::set<std::string> data_records;
        for (const auto& line : istat)
            if (line.starts_with("Type: 128-")) data_records.insert(line.substr(line.find("MFT Entry: ")));
        CHECK(data_records.size() >= 3);
        CHECK(fragments(data_clusters(istat)) > 300);
    }
    SECTION("named streams and a sparse file") {
        const std::string fls = joined(tsk("fls", disk.path, {"-r", "-p"}));
        CHECK(fls.find(":Zone.Identifier") != std::string::npos);
        CHECK(fls.find(":AFP_Resource") != std::string::npos);
        CHECK(s.named_streams >= 5);
        REQUIRE(s.named_stream_record != 0);
        const std::string named = joined(tsk("istat", disk.path, {std::to_string(s.named_stream_record)}));
        CHECK((named.find("Name: Zone.Identifier") != std::string::npos ||
               named.find("Name: AFP_Resource") != std::string::npos));

        REQUIRE(s.sparse_record != 0);
        const auto sparse = tsk("istat", disk.path, {std::to_string(s.sparse_record)});
        CHECK(joined(sparse).find("Non-Resident, Sparse") != std::string::npos);
        const auto clusters = data_clusters(sparse);
        CHECK(std::count(clusters.begin(), clusters.end(), 0u) == 4096);  // the 16 MiB hole
        CHECK(clusters.size() == 4096 + 2 * 16);                          // 64 KiB either side
    }
}

TEST_CASE("mkimage: GPT and bare-volume disks", "[mkimage]") {
    require_tsk();
    SECTION("gpt") {
        const fs::path gpt = guestfrag::test::generated_image("mkimage-gpt-64m", small("gpt"));
        const std::string mmls = joined(tsk("mmls", gpt, {}, 0));
        CHECK(mmls.find("GUID Partition Table") != std::string::npos);
        // The partition ends 33 sectors before the disk: the backup GPT lives there.
        CHECK(mmls.find("0000002048   0000131038   0000128991   Basic data partition") != std::string::npos);
        CHECK(joined(tsk("fsstat", gpt, {})).find("File System Type: NTFS") != std::string::npos);
        CHECK(live_files(joined(tsk("fls", gpt, {"-r", "-p"}))).size() == 400);
    }
    SECTION("none") {
        const fs::path bare = guestfrag::test::generated_image("mkimage-none-64m", small("none"));
        CHECK(joined(tsk("fsstat", bare, {}, 0)).find("File System Type: NTFS") != std::string::npos);
        CHECK(live_files(joined(tsk("fls", bare, {"-r", "-p"}, 0))).size() == 400);
        guestfrag::test::require_tools({"ntfsfix"});
        // -n: check only. Copy first: ntfsfix opens read-write even with -n.
        const fs::path copy =
            guestfrag::test::scratch_dir() / ("mkimage-none-copy." + std::to_string(::getpid()));
        fs::copy_file(bare, copy, fs::copy_options::overwrite_existing);
        const auto r = run({"ntfsfix", "-n", copy.string()});
        fs::remove(copy);
        INFO(r.out << r.err);
        CHECK(r.status == 0);
        CHECK(r.out.find("processed successfully") != std::string::npos);
    }
}

TEST_CASE("mkimage: the same seed gives the same files and extents", "[mkimage]") {
    require_tsk();
    MkImageOptions o = small();
    o.disk_size = 32ull << 20;
    o.files = 200;
    o.seed = 7;
    const Generated a("mkimage-seed-a", o);
    const Generated b("mkimage-seed-b", o);
    const auto listing = tsk("fls", a.path, {"-r", "-p"});
    CHECK(listing == tsk("fls", b.path, {"-r", "-p"}));
    CHECK(a.summary.fragmented_files == b.summary.fragmented_files);
    CHECK(a.summary.attribute_list_records == b.summary.attribute_list_records);
    // Extents of every listed file, metadata included.
    std::size_t compared = 0;
    for (const auto& line : listing) {
        if (!line.starts_with("r/r ") || line.find('*') != std::string::npos) continue;
        const std::string address = line.substr(4, line.find(':') - 4);
        INFO(line);
        CHECK(data_clusters(tsk("istat", a.path, {address})) ==
              data_clusters(tsk("istat", b.path, {address})));
        ++compared;
    }
    CHECK(compared > 150);

    o.seed = 8;
    const Generated c("mkimage-seed-c", o);
    CHECK(listing != tsk("fls", c.path, {"-r", "-p"}));
}

TEST_CASE("mkimage: the population plan is a pure function of the options", "[mkimage]") {
    using namespace guestfrag::mkimage;
    MkImageOptions o = small();
    o.files = 20000;
    const PopulationPlan p1 = plan_population(o, 1ull << 30);
    const PopulationPlan p2 = plan_population(o, 1ull << 30);
    REQUIRE(p1.files.size() == 20000);
    CHECK(p1.dirs.size() == 41);  // root + one per 500 files
    CHECK(p1.deletions == p2.deletions);
    CHECK(p1.deletions.size() == 4000);
    std::set<std::pair<std::uint32_t, std::string>> names;
    std::size_t resident = 0, large = 0;
    for (std::size_t i = 0; i < p1.files.size(); ++i) {
        CHECK(p1.files[i].name == p2.files[i].name);
        CHECK(p1.files[i].size == p2.files[i].size);
        names.insert({p1.files[i].dir, p1.files[i].name});
        resident += p1.files[i].size < 700;
        large += p1.files[i].size >= (1u << 20);
    }
    CHECK(names.size() == p1.files.size());  // unique within each directory
    CHECK(resident > 2000);                  // about a fifth are resident-sized
    CHECK(large > 20);                       // and some are in the MiB range
    for (const auto& d : p1.dirs) CHECK(d.depth <= 3);
    // Pinned values: a change in the generator (or a platform whose arithmetic differs) must
    // be noticed, because it changes every generated image.
    CHECK(p1.files[3].name == "letter_000000.pdf");
    CHECK(p1.files[3].size == 130706);
    CHECK(p1.files[4].name == "record_000001.json");
    CHECK(p1.files[4].size == 3180);
    CHECK(p1.files[19999].name == "log_019996.jpg");
    CHECK(p1.deletions.front() == 2060);
    CHECK(p1.dirs[5].name == "Video-0005");
    o.seed = 2;
    CHECK(plan_population(o, 1ull << 30).files[3].name != p1.files[3].name);
}

TEST_CASE("mkimage: layouts", "[mkimage]") {
    using namespace guestfrag::mkimage;
    MkImageOptions o = small("gpt");
    o.output = "unused.img";
    auto layout = plan_layout(o);
    CHECK(layout.partitioned);
    CHECK(layout.volume_offset == 1u << 20);
    CHECK(layout.volume_length == (64u << 20) - (1u << 20) - 33 * 512);
    o.table = "none";
    layout = plan_layout(o);
    CHECK_FALSE(layout.partitioned);
    CHECK(layout.volume_offset == 0);
    CHECK(layout.volume_length == 64u << 20);
}

TEST_CASE("mkimage: absurd options are refused before anything is written", "[mkimage]") {
    const fs::path out =
        guestfrag::test::scratch_dir() / ("mkimage-bad." + std::to_string(::getpid()) + ".img");
    {
        std::ofstream keep(out);
        keep << "keep me";
    }
    auto refused = [&](MkImageOptions o) {
        o.output = out;
        try {
            guestfrag::make_image(o);
        } catch (const Error& e) {
            INFO(e.what());
            CHECK(e.kind() == ErrorKind::Unsupported);
            CHECK(std::string(e.what()).find('\n') == std::string::npos);
            return true;
        }
        return false;
    };
    MkImageOptions o = small();
    o.cluster_size = 3000;
    CHECK(refused(o));
    o = small();
    o.cluster_size = 256;
    CHECK(refused(o));
    o = small();
    o.cluster_size = 4u << 20;
    CHECK(refused(o));
    o = small();
    o.partition_start = 1000;
    CHECK(refused(o));
    o = small("gpt");
    o.partition_start = 8192;  // inside the GPT entries
    CHECK(refused(o));
    o = small();
    o.partition_start = 64ull << 20;
    CHECK(refused(o));
    o = small();
    o.table = "bsd";
    CHECK(refused(o));
    o = small();
    o.disk_size = 8ull << 20;
    o.files = 100000;  // the MFT records alone need 100 MiB
    CHECK(refused(o));
    o = small();
    o.disk_size = 1000;
    CHECK(refused(o));
    o = small();
    o.delete_fraction = 1.5;
    CHECK(refused(o));
    o = small();
    o.label = std::string(33, 'x');
    CHECK(refused(o));
    o = small();
    o.interleave = 0;
    CHECK(refused(o));
    o = small();
    o.compressed = true;
    o.cluster_size = 8192;  // NTFS compresses nothing on clusters over 4 KiB
    CHECK(refused(o));

    std::ifstream in(out);
    std::string content;
    std::getline(in, content);
    CHECK(content == "keep me");
    fs::remove(out);
}

TEST_CASE("mkimage --compressed: two logs whose units TSK decompresses, each in fewer clusters than it spans",
          "[mkimage]") {
    require_tsk();
    MkImageOptions o = small("none");
    o.files = 100;
    o.compressed = true;
    o.cluster_size = 2048;
    const Generated g("mkimage-compressed", o);
    REQUIRE(g.summary.compressed_records.size() == 2);
    const std::int64_t unit = 16;
    for (const std::uint64_t record : g.summary.compressed_records) {
        INFO("record " << record);
        const auto istat = run({"istat", g.path.string(), std::to_string(record)});
        REQUIRE(istat.status == 0);
        CHECK(istat.out.find("Compressed") != std::string::npos);
        // LZNT1 is The Sleuth Kit's own: every 64-byte line of the log is there, in order.
        const std::string text = run({"icat", g.path.string(), std::to_string(record)}).out;
        REQUIRE(text.size() >= 64 * 1024);
        REQUIRE(text.size() % 64 == 0);
        for (std::size_t line = 0; line < text.size() / 64; line += 97) {
            char entry[32];
            const int n = std::snprintf(entry, sizeof entry, "entry %09zu: ok", line);
            CHECK(text.compare(line * 64 + 41, static_cast<std::size_t>(n), entry) == 0);
        }
        // Each unit is stored in fewer clusters than it spans: a hole ends it, and the units
        // of the two logs alternate on disk.
        std::size_t holes = 0;
        std::size_t runs = 0;
        for (const auto& l : lines(run({"istat", "-r", g.path.string(), std::to_string(record)}).out)) {
            runs += l.find("Starting address") != std::string::npos ? 1 : 0;
            holes += l.find("Filler") != std::string::npos || l.find("Sparse") != std::string::npos ? 1 : 0;
        }
        INFO(run({"istat", "-r", g.path.string(), std::to_string(record)}).out);
        CHECK(holes >= text.size() / (unit * 2048) - 1);
        CHECK(runs > 1);
    }
}

TEST_CASE("mkimage: a full volume stops the population without failing", "[mkimage]") {
    MkImageOptions o = small("none");
    o.disk_size = 14ull << 20;
    o.files = 5000;
    const Generated disk("mkimage-full", o);
    CHECK(disk.summary.volume_full);
    CHECK(disk.summary.files_created > 1000);
    CHECK(disk.summary.files_created < 5000);
    require_tsk();
    CHECK(live_files(joined(tsk("fls", disk.path, {"-r", "-p"}, 0))).size() == disk.summary.files_kept);
}

TEST_CASE("mkimage: cancellation removes every file it made", "[mkimage]") {
    const fs::path dir = guestfrag::test::scratch_dir() / ("mkimage-cancel." + std::to_string(::getpid()));
    fs::create_directories(dir);
    MkImageOptions o = small();
    o.output = dir / "out.img";
    std::stop_source stop;
    guestfrag::Progress progress;
    progress.stop = stop.get_token();
    progress.report = [&](std::uint64_t done, std::uint64_t) {
        if (done >= 100) stop.request_stop();
    };
    try {
        guestfrag::make_image(o, progress);
        FAIL("not cancelled");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Cancelled);
    }
    CHECK(fs::is_empty(dir));
    fs::remove_all(dir);
}

TEST_CASE("mkimage: command line", "[mkimage][cli]") {
    const fs::path out =
        guestfrag::test::scratch_dir() / ("mkimage-cli." + std::to_string(::getpid()) + ".img");
    auto r =
        guestfrag::test::run_cli({"mkimage", out.string(), "--size", "32MiB", "--files", "100", "--table",
                                  "gpt", "--cluster-size", "2K", "--seed", "3", "--label", "demo"});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.out.find("100 files, 20 deleted, 80 kept") != std::string::npos);
    CHECK(r.out.find("32.0 MiB disk") != std::string::npos);
    CHECK(r.err.empty());  // no progress when stderr is not a terminal
    CHECK(fs::file_size(out) == 32u << 20);

    // An existing OUT is kept unless --force.
    const std::uint64_t before = guestfrag::test::file_fingerprint(out);
    r = guestfrag::test::run_cli({"mkimage", out.string(), "--size", "16MiB", "--files", "10"});
    CHECK(r.status == 2);
    CHECK(r.err == "guestfrag: error: " + out.string() + ": the output " + out.string() +
                       " exists (it is not replaced); --force replaces it\n");
    CHECK(guestfrag::test::file_fingerprint(out) == before);
    r = guestfrag::test::run_cli({"mkimage", out.string(), "--size", "16MiB", "--files", "10", "--force"});
    CHECK(r.status == 0);
    CHECK(fs::file_size(out) == 16u << 20);
    fs::remove(out);
    // Only a regular file is ever replaced.
    r = guestfrag::test::run_cli({"mkimage", "/dev/null", "--force"});
    CHECK(r.status == 2);
    CHECK(r.err.find("is a character device, not a regular file") != std::string::npos);

    r = guestfrag::test::run_cli({"mkimage", out.string(), "--size", "12Q"});
    CHECK(r.status == 1);
    r = guestfrag::test::run_cli({"mkimage", out.string(), "--cluster-size", "3000"});
    CHECK(r.status == 2);
    CHECK(r.err.starts_with("guestfrag: error: " + out.string() + ": --cluster-size"));
    CHECK_FALSE(fs::exists(out));
}

TEST_CASE("mkimage --layout-ini: a Windows Layout.ini listing kept files in a seeded boot order",
          "[mkimage][layout]") {
    require_tsk();
    guestfrag::test::require_tools({"ifind"});
    MkImageOptions o = small();
    o.files = 300;
    o.layout_ini = 50;
    const Generated disk("mkimage-layout", o);
    const MkImageSummary& s = disk.summary;
    REQUIRE(s.layout_ini_files == 50);
    REQUIRE(s.layout_ini_record != 0);
    CHECK_FALSE(s.volume_full);

    // The Sleuth Kit finds it where Windows keeps it, and reads it as Windows writes it.
    CHECK(ifind(disk.path, "/Windows/Prefetch/Layout.ini") == std::to_string(s.layout_ini_record));
    const std::string bytes = guestfrag::test::tsk_icat(disk.path, 2048, std::to_string(s.layout_ini_record));
    const auto lines = layout_ini_lines(bytes);
    REQUIRE(lines.size() == 2 + 50);
    CHECK(lines[0] == "[OptimalLayoutFile]");
    CHECK(lines[1] == "Version=1");
    const std::vector<std::string> listed(lines.begin() + 2, lines.end());
    CHECK(std::set<std::string>(listed.begin(), listed.end()).size() == 50);

    // Every path is a live regular file of the population: TSK's ifind and fls agree on it.
    const auto live = live_entries(tsk("fls", disk.path, {"-r", "-p"}));
    std::vector<std::string> volume_paths;
    std::vector<std::string> addresses;  // "64-128-2", as fls lists them
    for (const auto& path : listed) {
        INFO(path);
        REQUIRE(path.starts_with("C:\\"));
        std::string tsk_path = path.substr(2);
        std::replace(tsk_path.begin(), tsk_path.end(), '\\', '/');
        CHECK_FALSE(tsk_path.starts_with("/Windows/"));
        const std::string record = ifind(disk.path, tsk_path);
        REQUIRE_FALSE(record.empty());
        const auto entry = live.find(tsk_path.substr(1));
        REQUIRE(entry != live.end());  // allocated, not deleted
        CHECK(entry->second.starts_with("r/r " + record + "-"));
        addresses.push_back(entry->second.substr(4, entry->second.find(':') - 4));
        volume_paths.push_back(path.substr(2));
    }

    // The estimator's own readers take it: the parser of the bytes, and @layout on the image.
    CHECK(guestfrag::parse_path_list(std::as_bytes(std::span(bytes.data(), bytes.size())), "Layout.ini") ==
          volume_paths);
    {
        const auto image = guestfrag::open_image(disk.path.string());
        const auto analysis = guestfrag::analyze_image(*image);
        CHECK(guestfrag::load_trace("@layout", *image, analysis.volumes.at(0).map) == volume_paths);
    }

    // The same seed lists the same files in the same order.
    {
        const Generated again("mkimage-layout-again", o);
        CHECK(guestfrag::test::tsk_icat(again.path, 2048, std::to_string(again.summary.layout_ini_record)) ==
              bytes);
    }

    // Without the option: the same population in the same places, and no \\Windows.
    o.layout_ini = 0;
    const Generated plain("mkimage-layout-none", o);
    CHECK(plain.summary.layout_ini_files == 0);
    CHECK(plain.summary.layout_ini_record == 0);
    CHECK(plain.summary.files_kept == s.files_kept);
    CHECK(plain.summary.directories + 2 == s.directories);
    CHECK(plain.summary.fragmented_records == s.fragmented_records);
    CHECK(ifind(plain.path, "/Windows").empty());
    // Live files with their MFT records. Deleted entries are left out: \\Windows and
    // Layout.ini may take the records of deleted files.
    auto without_windows = live;
    std::erase_if(without_windows, [](const auto& e) { return e.first.starts_with("Windows/"); });
    CHECK(without_windows.size() + 1 == live.size());
    CHECK(without_windows == live_entries(tsk("fls", plain.path, {"-r", "-p"})));
    // Layout.ini is written after the files it lists: their clusters are where they were.
    for (const auto& address : addresses) {
        INFO("record " << address);
        CHECK(data_clusters(tsk("istat", disk.path, {address})) ==
              data_clusters(tsk("istat", plain.path, {address})));
    }
}

TEST_CASE("mkimage --layout-ini: more files than the volume keeps lists them all", "[mkimage][layout]") {
    require_tsk();
    MkImageOptions o = small("none");
    o.disk_size = 32ull << 20;
    o.files = 40;
    o.layout_ini = 1000;
    const Generated disk("mkimage-layout-capped", o);
    REQUIRE(disk.summary.files_kept == 32);
    CHECK(disk.summary.layout_ini_files == 32);
    REQUIRE(disk.summary.layout_ini_record != 0);
    const auto lines = layout_ini_lines(
        guestfrag::test::tsk_icat(disk.path, 0, std::to_string(disk.summary.layout_ini_record)));
    CHECK(lines.size() == 2 + 32);
    CHECK(std::set<std::string>(lines.begin() + 2, lines.end()).size() == 32);

    SECTION("NtfsWriter finds a directory that is there and refuses a file in its place") {
        using guestfrag::mkimage::NtfsWriter;
        guestfrag::UniqueFd fd(::open(disk.path.c_str(), O_RDWR | O_CLOEXEC));
        REQUIRE(fd.get() >= 0);
        guestfrag::WritableRawFile file(fd.get(), disk.path.string());
        NtfsWriter ntfs(file, 0, fs::file_size(disk.path));
        const auto windows = ntfs.find_directory(NtfsWriter::root(), "Windows");
        REQUIRE(windows.has_value());
        const auto prefetch = ntfs.find_directory(*windows, "Prefetch");
        REQUIRE(prefetch.has_value());
        CHECK_FALSE(ntfs.find_directory(*windows, "System32").has_value());
        try {
            (void)ntfs.find_directory(*prefetch, "Layout.ini");
            FAIL("a file taken for a directory");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Io);
        }
        ntfs.unmount();
    }
    SECTION("the command line says so") {
        const fs::path out =
            guestfrag::test::scratch_dir() / ("mkimage-layout-cli." + std::to_string(::getpid()) + ".img");
        auto r = guestfrag::test::run_cli({"mkimage", out.string(), "--size", "32MiB", "--files", "100",
                                           "--table", "none", "--layout-ini", "2000"});
        INFO(r.err);
        CHECK(r.status == 0);
        CHECK(r.out.find(": Layout.ini lists 80 files (asked for 2000; the volume keeps 80)\n") !=
              std::string::npos);
        r = guestfrag::test::run_cli({"mkimage", out.string(), "--size", "32MiB", "--files", "100", "--table",
                                      "none", "--layout-ini", "010", "--force"});
        CHECK(r.status == 0);
        CHECK(r.out.find(": Layout.ini lists 10 files\n") != std::string::npos);
        fs::remove(out);
        for (const char* bad : {"-3", "many", "1e3", ""}) {
            INFO("--layout-ini '" << bad << "'");
            r = guestfrag::test::run_cli({"mkimage", out.string(), "--layout-ini", bad});
            CHECK(r.status == 1);
            CHECK(r.err.find("--layout-ini") != std::string::npos);
            CHECK_FALSE(fs::exists(out));
        }
    }
}

TEST_CASE("mkimage --layout-ini: encoding and boot order", "[mkimage][layout]") {
    using namespace guestfrag::mkimage;
    auto units = [](const std::vector<unsigned char>& bytes) {
        std::vector<unsigned> out;
        for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) out.push_back(bytes[i] | bytes[i + 1] << 8u);
        return out;
    };
    // ASCII, two-, three- and four-byte sequences; U+1F600 is a surrogate pair.
    CHECK(units(to_utf16le("C:\\J\xC3\xBCrgen\\\xE2\x82\xAC\xF0\x9F\x98\x80.txt")) ==
          std::vector<unsigned>{'C', ':', '\\', 'J', 0xFC, 'r', 'g', 'e', 'n', '\\', 0x20AC, 0xD83D, 0xDE00,
                                '.', 't', 'x', 't'});
    for (const char* bad : {"\x80", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xC3",
                            "a\xE2\x82", "\xF5\x80\x80\x80", "\xC3("}) {
        INFO(bad);
        try {
            (void)to_utf16le(bad);
            FAIL("accepted");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Internal);
        }
    }
    const auto ini = layout_ini_bytes({"C:\\a.dll", "C:\\b\\c.exe"});
    REQUIRE(ini.size() > 2);
    CHECK(ini[0] == 0xFF);
    CHECK(ini[1] == 0xFE);
    std::string text;
    for (const unsigned u : units({ini.begin() + 2, ini.end()})) text += static_cast<char>(u);
    CHECK(text == "[OptimalLayoutFile]\r\nVersion=1\r\nC:\\a.dll\r\nC:\\b\\c.exe\r\n");

    const auto order = draw_boot_order(1000, 100, 1);
    CHECK(order == draw_boot_order(1000, 100, 1));
    CHECK(order != draw_boot_order(1000, 100, 2));
    CHECK(std::set<std::size_t>(order.begin(), order.end()).size() == 100);
    CHECK(*std::max_element(order.begin(), order.end()) < 1000);
    CHECK_FALSE(std::is_sorted(order.begin(), order.end()));
    const auto all = draw_boot_order(5, 5, 9);
    CHECK(std::set<std::size_t>(all.begin(), all.end()) == std::set<std::size_t>{0, 1, 2, 3, 4});
    CHECK(draw_boot_order(5, 0, 9).empty());
}
