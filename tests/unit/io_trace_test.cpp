// SPDX-License-Identifier: GPL-2.0-or-later
// Block IO traces (core/estimate/io_trace.hpp, docs/estimate.md §2.3): nbdkit's log filter
// recording what qemu-io asked of a disk it serves, blkparse and vscsiStats lines as those
// tools print them, malformed lines refused with their number, and a trace replayed on a
// hand-built volume before and after its files moved.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/estimate/io_trace.hpp"
#include "support/fixtures.hpp"
#include "support/hand_volume.hpp"
#include "support/nbd_server.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

std::vector<Io> parse(const std::string& text, IoTraceFormat format) {
    std::istringstream in(text);
    return parse_io_trace(in, format, "trace");
}

std::vector<Io> replayed(const IoTraceReplay& trace, const VolumeMap& state) {
    std::vector<Io> out;
    trace.replay(state, [&](const Io& io) { out.push_back(io); });
    return out;
}

}  // namespace

TEST_CASE("an nbdkit log: the reads and writes qemu-io sent, in order", "[estimate][trace]") {
    test::require_tools({"nbdkit", "qemu-io"});
    const test::WorkDir dir("io-trace-nbdkit");
    const fs::path disk = dir.path() / "disk.img";
    const fs::path log = dir.path() / "nbdkit.log";
    { std::ofstream(disk, std::ios::binary) << std::string(4 << 20, 'x'); }
    {
        const test::NbdServer server("nbdkit",
                                     {"--filter=log", "file", disk.string(), "logfile=" + log.string()});
        const auto io = test::run({"qemu-io", "-f", "raw", "-c", "read 1M 64k", "-c", "read 0 4k", "-c",
                                   "write 8k 4k", "-c", "read 3M 1M", server.uri()});
        REQUIRE(io.status == 0);
    }
    std::ifstream head(log);
    std::string first;
    std::getline(head, first);
    CHECK(detect_io_trace(first) == IoTraceFormat::NbdkitLog);
    const auto ios = read_io_trace(log.string());
    REQUIRE(ios);
    // What qemu-io asked for, sector numbers and bytes.
    const std::vector<Io> expected{
        {2048, 65536, false}, {0, 4096, false}, {16, 4096, true}, {6144, 1 << 20, false}};
    CHECK(*ios == expected);
}

TEST_CASE("blkparse output: D events, or Q events when there are none, flushes and summaries skipped",
          "[estimate][trace]") {
    const std::string text =
        "  8,0    1        1     0.000000000  4242  Q   R 2048 + 8 [cat]\n"
        "  8,0    1        2     0.000001000  4242  G   R 2048 + 8 [cat]\n"
        "  8,0    1        3     0.000004000  4242  D   R 2048 + 8 [cat]\n"
        "  8,0    1        4     0.000090000     0  C   R 2048 + 8 [0]\n"
        "  8,0    1        5     0.000100000  4242  D  WS 4096 + 16 [cat]\n"
        "  8,0    1        6     0.000110000  4242  D  FN [cat]\n"
        "  8,0    1        7     0.000120000  4242  D  DS 8192 + 8 [fstrim]\n"
        "CPU1 (8,0):\n"
        " Reads Queued:           1,        4KiB\t Writes Queued:           1,        8KiB\n";
    std::istringstream lines(text);
    std::string first;
    std::getline(lines, first);
    CHECK(detect_io_trace(first) == IoTraceFormat::Blkparse);
    CHECK(parse(text, IoTraceFormat::Blkparse) == std::vector<Io>{{2048, 4096, false}, {4096, 8192, true}});
    // Only queue events (blktrace -a queue): those.
    CHECK(parse("  8,0 0 1 0.0 7 Q R 100 + 2 [dd]\n  8,0 0 2 0.1 7 Q R 102 + 2 [dd]\n",
                IoTraceFormat::Blkparse) == std::vector<Io>{{100, 1024, false}, {102, 1024, false}});
}

TEST_CASE("a vscsiStats command trace as CSV: in time-stamp order", "[estimate][trace]") {
    const std::string text =
        "#Vscsi Cmd Trace. (Trace Format Version 1)\n"
        "#Serial Number,IO Data Length,Num SG Entries,Command Type,LBN,Time Stamp (microseconds)\n"
        "2147483692,4096,1,write,24048792,2756778716647\n"
        "2147483769,8192,2,read,6322464,2756778716600\n"
        "2147483770,512,1,inquiry,0,2756778716700\n";
    CHECK(detect_io_trace("#Vscsi Cmd Trace. (Trace Format Version 1)") == IoTraceFormat::VscsiStatsCsv);
    CHECK(parse(text, IoTraceFormat::VscsiStatsCsv) ==
          std::vector<Io>{{6322464, 8192, false}, {24048792, 4096, true}});
}

TEST_CASE("IO traces: a list of paths is none, and a malformed line is refused with its number",
          "[estimate][trace]") {
    CHECK_FALSE(detect_io_trace("\\Windows\\System32\\ntdll.dll"));
    CHECK_FALSE(detect_io_trace("[OptimalLayoutFile]"));
    CHECK_FALSE(detect_io_trace(""));
    const auto refused = [](const std::string& text, IoTraceFormat format, const std::string& message) {
        try {
            (void)parse(text, format);
            FAIL("accepted: " << text);
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Corrupt);
            CHECK(std::string(e.what()) == message);
        }
    };
    refused(
        "2026-12-02 00:58:22.497794 connection=1 Read id=2 offset=0x0 count=0x200 ...\n"
        "2026-12-02 00:58:22.497794 connection=1 Read id=3 offset=0x200 ...\n",
        IoTraceFormat::NbdkitLog, "trace line 2: an IO without its offset or length");
    refused("2026-12-02 00:58:22.497794 connection=1 Read id=2 offset=0xffffffffffffffff count=0x200 ...\n",
            IoTraceFormat::NbdkitLog,
            "trace line 1: an IO at byte 18446744073709551615 of 512 bytes is no real disk's");
    refused("2026-12-02 00:58:22.497794 connection=1 Write id=2 offset=0x0 count=0x0 ...\n",
            IoTraceFormat::NbdkitLog, "trace line 1: an IO at byte 0 of 0 bytes is no real disk's");
    refused("  8,0 0 1 0.0 7 D R x + 2 [dd]\n", IoTraceFormat::Blkparse,
            "trace line 1: an IO whose sector or length is not a number in range");
    refused("#Vscsi Cmd Trace\n1,4096,1,read\n", IoTraceFormat::VscsiStatsCsv,
            "trace line 2: a command with 4 fields, not 6");
}

TEST_CASE("a trace replayed: the same IOs before, each file's reads where a plan put it after",
          "[estimate][trace]") {
    // 4 KiB clusters at 1 MiB on the disk: a.bin in clusters 100-103, b.bin in 104-105.
    VolumeMap before = test::empty_volume(1000);
    before.partition_offset = 1 << 20;
    before.files = {{40, 5, false, "a.bin"}, {41, 5, false, "b.bin"}};
    before.streams = {test::stream(40, {{0, 100, 4}}), test::stream(41, {{0, 104, 2}})};
    const auto lbn = [](std::int64_t cluster) { return ((1 << 20) + cluster * 4096) / 512; };
    // One 24 KiB read over both files, then 8 KiB of free clusters 300-301, then 2 KiB
    // from the middle of a.bin's third cluster.
    const std::vector<Io> trace{
        {lbn(100), 24576, false}, {lbn(300), 8192, false}, {lbn(102) + 2, 2048, false}};
    const IoTraceReplay replay(before, trace);
    CHECK(replay.ios() == 3);
    CHECK(replayed(replay, before) == trace);
    CHECK(replay.files_read(before) == std::vector<std::string>{"\\a.bin", "\\b.bin"});

    // a.bin moved to 200-201 and 500-501: the first read is three IOs, the free read stays,
    // the last lands in a.bin's third cluster's new place (500).
    VolumeMap after = before;
    after.streams[0].extents = {{0, 200, 2}, {2, 500, 2}};
    CHECK(replayed(replay, after) == std::vector<Io>{{lbn(200), 8192, false},
                                                     {lbn(500), 8192, false},
                                                     {lbn(104), 8192, false},
                                                     {lbn(300), 8192, false},
                                                     {lbn(500) + 2, 2048, false}});
    // A state without b.bin reads its clusters where the trace read them.
    VolumeMap without = after;
    without.streams.pop_back();
    CHECK(replayed(replay, without)[2] == Io{lbn(104), 8192, false});
}

TEST_CASE("estimate --workload trace:LOG replays an nbdkit log of a real read, before and after a plan",
          "[estimate][trace][cli]") {
    test::require_tools({"nbdkit", "qemu-img"});
    const std::string image = test::fragmented_256_image().string();
    const test::WorkDir dir("io-trace-estimate");
    const fs::path log = dir.path() / "nbdkit.log";
    {
        // qemu-img reads the disk as a guest's dd would: the log is the oracle's record.
        const test::NbdServer server(
            "nbdkit", {"--filter=log", "--readonly", "file", image, "logfile=" + log.string()});
        REQUIRE(test::run({"qemu-img", "convert", "-f", "raw", "-O", "raw", server.uri(),
                           (dir.path() / "copy.raw").string()})
                    .status == 0);
    }
    // The volume's window on the disk, from analyze.
    const auto analysis = nlohmann::json::parse(test::run_cli({"analyze", image, "--json"}).out);
    const auto& v = analysis["volumes"][0];
    const auto first = v["offset"].get<std::uint64_t>();
    const auto last =
        first + v["cluster_size"].get<std::uint64_t>() * v["total_clusters"].get<std::uint64_t>();
    // The reads the log holds that reach into the volume, and their bytes inside it,
    // counted here with a regular expression.
    std::uint64_t reads = 0, bytes = 0;
    {
        std::ifstream in(log);
        const std::regex request(R"( Read id=\d+ offset=(0x[0-9a-f]+) count=(0x[0-9a-f]+) )");
        std::smatch m;
        for (std::string line; std::getline(in, line);)
            if (std::regex_search(line, m, request)) {
                const std::uint64_t at = std::stoull(m[1].str(), nullptr, 16);
                const std::uint64_t end = at + std::stoull(m[2].str(), nullptr, 16);
                if (end <= first || at >= last) continue;
                ++reads;
                bytes += std::min(end, last) - std::max(at, first);
            }
    }
    REQUIRE(reads > 0);
    const fs::path plan = dir.path() / "plan.json";
    REQUIRE(test::run_cli({"plan", image, "--strategy", "optimize", "-o", plan.string()}).status == 0);
    const auto run = test::run_cli(
        {"estimate", image, "--workload", "trace:" + log.string(), "--plan", plan.string(), "--json"});
    REQUIRE(run.status == 0);
    const auto doc = nlohmann::json::parse(run.out);
    const auto& volume = doc["volumes"][0];
    CHECK(volume["before"]["ios"].get<std::uint64_t>() == reads);
    CHECK(volume["before"]["bytes"].get<std::uint64_t>() == bytes);
    // A plan moves data, it does not change what is read; it cuts reads the guest made in
    // one piece where it moved part of what they covered.
    CHECK(volume["after"]["bytes"] == volume["before"]["bytes"]);
    CHECK(volume["after"]["ios"].get<std::uint64_t>() >= reads);

    // --compare: the same trace beside a scan's estimate, in JSON and in text.
    const auto compared = test::run_cli({"estimate", image, "--compare", log.string(), "--json"});
    REQUIRE(compared.status == 0);
    const auto compared_doc = nlohmann::json::parse(compared.out);
    const auto& traced = compared_doc["volumes"][0]["traced"];
    CHECK(traced["ios"].get<std::uint64_t>() == reads);
    CHECK(traced["bytes"].get<std::uint64_t>() == bytes);
    const auto text = test::run_cli({"estimate", image, "--compare", log.string()});
    CHECK(text.status == 0);
    CHECK_THAT(text.out, Catch::Contains("Traced vs estimated"));
    CHECK_THAT(text.out, Catch::Contains("(traced | estimated)"));
    // A list of paths is not an IO trace: one line, exit 2.
    const fs::path list = dir.path() / "paths.txt";
    std::ofstream(list) << "\\a.txt\n";
    const auto refused = test::run_cli({"estimate", image, "--compare", list.string()});
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("is not an IO trace"));
}
