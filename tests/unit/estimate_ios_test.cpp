// SPDX-License-Identifier: GPL-2.0-or-later
// IO streams and their statistics (docs/design.md §4) on hand-built VolumeMaps. Every expected IO,
// bucket, percentage and device time is worked out in the comment above it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/guest_model.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/estimate/scan_workload.hpp"
#include "core/estimate/stream_ios.hpp"
#include "core/estimate/trace_workload.hpp"
#include "core/estimate/workload.hpp"

using guestfrag::AttrType;
using guestfrag::Extent;
using guestfrag::Io;
using guestfrag::IoStats;
using guestfrag::Placement;
using guestfrag::Stream;
using guestfrag::VolumeMap;

namespace {

constexpr std::int64_t kHole = Extent::kSparse;
constexpr auto kData = static_cast<std::uint32_t>(AttrType::Data);
constexpr auto kIndexAllocation = static_cast<std::uint32_t>(AttrType::IndexAllocation);
constexpr std::uint64_t MiB = 1 << 20;

Stream stream(std::uint64_t record, std::uint32_t type, std::string_view name, std::uint64_t size,
              std::vector<Extent> runs) {
    Stream s;
    s.mft_record = record;
    s.type = type;
    s.name = name;  // a literal: Stream::name is a view
    s.size = size;
    s.allocated_size = size;
    s.extents = std::move(runs);
    return s;
}

/// The scan workload's IOs as the raw guest reads them (the estimator's GuestReader with the
/// raw profile: each stream's extents, cut at `max_io`).
std::vector<Io> scan_ios(const VolumeMap& volume, guestfrag::Workload::ScanOrder order,
                         std::uint64_t max_io) {
    std::vector<Io> ios;
    guestfrag::GuestReader raw(volume, *guestfrag::find_guest_profile("raw"), max_io,
                               [&ios](const Io& io) { ios.push_back(io); });
    guestfrag::scan_reads(volume, order, [&raw](std::uint64_t, const Stream* s) {
        if (s) raw.read(*s);
    });
    return ios;
}

/// What scan_reads hands over, in order: "RECORD" for a file opened alone, else
/// "RECORD" + the stream's label.
std::vector<std::string> scan_order(const VolumeMap& volume, guestfrag::Workload::ScanOrder order) {
    std::vector<std::string> got;
    guestfrag::scan_reads(volume, order, [&got](std::uint64_t record, const Stream* s) {
        got.push_back(std::to_string(record) + (s ? s->label() : ""));
    });
    return got;
}

/// 4 KiB clusters, the volume at byte 1 MiB of the disk = sector 2048, so cluster x starts
/// at sector 2048 + 8x. The streams are listed out of order on purpose: the scan sorts by
/// (mft_record, label).
///
///  record  stream        size    runs (vcn, lcn, clusters)          scan?
///  41      $DATA:ads     1000    (0,50,1)                           yes: 1000 → 1024 bytes
///  2       $DATA         8192    (0,10,2)                           yes (metadata counts too)
///  41      $DATA         20000   (0,103,2) (2,hole,1) (3,200,2)     yes: hole skipped
///  40      $DATA         12288   (0,100,3)                          yes
///  42      $INDEX_ALLOC  4096    (0,60,1)                           no: not $DATA
///  43      $DATA         0       (0,70,1)                           no: size 0
///  44      $DATA         8192    (0,hole,2)                         yes, but no IO: all hole
VolumeMap hand_volume() {
    VolumeMap v;
    v.partition = 1;
    v.partition_offset = 1 * MiB;
    v.cluster_size = 4096;
    v.total_clusters = 1000;
    v.files = {{2, 5, false, "$LogFile"}, {5, 5, true, "."},        {40, 5, false, "a.bin"},
               {41, 45, false, "b.bin"},  {42, 5, true, "dir"},     {43, 5, false, "empty"},
               {44, 5, false, "sparse"},  {45, 5, true, "Windows"}, {46, 99, false, "lost.txt"}};
    v.streams = {
        stream(41, kData, "ads", 1000, {{0, 50, 1}}),
        stream(2, kData, "", 8192, {{0, 10, 2}}),
        stream(41, kData, "", 20000, {{0, 103, 2}, {2, kHole, 1}, {3, 200, 2}}),
        stream(40, kData, "", 12288, {{0, 100, 3}}),
        stream(42, kIndexAllocation, "$I30", 4096, {{0, 60, 1}}),
        stream(43, kData, "", 0, {{0, 70, 1}}),
        stream(44, kData, "", 8192, {{0, kHole, 2}}),
        stream(46, kData, "", 0, {}),
    };
    v.streams[1].placement = Placement::Unmovable;
    return v;
}

}  // namespace

TEST_CASE("scan reads $DATA streams by (record, label), holes skipped, last IO rounded to 512",
          "[estimate]") {
    const VolumeMap v = hand_volume();
    // Every file is opened; those with no $DATA of size > 0 (the root, 42's index is no
    // $DATA, 43 is empty, 45, 46) alone.
    CHECK(scan_order(v, guestfrag::Workload::ScanOrder::Mft) ==
          std::vector<std::string>{"2$DATA", "5", "40$DATA", "41$DATA", "41$DATA:ads", "42", "43", "44$DATA",
                                   "45", "46"});

    // record 2:  LCN 10 → sector 2048 + 80 = 2128, 2 clusters = 8192 bytes
    // record 40: LCN 100 → 2848, 3 clusters = 12288 bytes
    // record 41: LCN 103 → 2872, 8192 bytes; hole (VCN 2) skipped; LCN 200 → 3648, bytes
    //            12288..20480 of the file (20000 rounded up to 20480) = 8192 bytes
    // record 41 ads: LCN 50 → 2448, 1000 bytes rounded up to 1024
    // record 44: all hole, no IO
    const std::vector<Io> expected = {{2128, 8192}, {2848, 12288}, {2872, 8192}, {3648, 8192}, {2448, 1024}};
    CHECK(scan_ios(v, guestfrag::Workload::ScanOrder::Mft, MiB) == expected);
}

TEST_CASE("scan:path walks the tree depth first: a directory's index, then its entries by name",
          "[estimate]") {
    VolumeMap v = hand_volume();
    std::ranges::sort(v.streams, [](const Stream& a, const Stream& b) {
        return std::tuple(a.mft_record, a.type, a.name) < std::tuple(b.mft_record, b.type, b.name);
    });
    // The root's entries by folded name: $LogFile (2), a.bin (40), dir (42), empty (43),
    // sparse (44), Windows (45) and below it b.bin (41); lost.txt (46) has no parent and
    // comes last. Read: $DATA of size > 0 and non-resident directory indexes.
    // The root and the files with nothing read are opened where the walk meets them; 46,
    // which the walk does not reach and which has no stream read, is not.
    CHECK(scan_order(v, guestfrag::Workload::ScanOrder::Path) ==
          std::vector<std::string>{"5", "2$DATA", "40$DATA", "42$INDEX_ALLOCATION:$I30", "43", "44$DATA",
                                   "45", "41$DATA", "41$DATA:ads"});
    // record 42's index: LCN 60 → sector 2048 + 480 = 2528, one cluster.
    const std::vector<Io> expected = {{2128, 8192}, {2848, 12288}, {2528, 4096},
                                      {2872, 8192}, {3648, 8192},  {2448, 1024}};
    CHECK(scan_ios(v, guestfrag::Workload::ScanOrder::Path, MiB) == expected);
    CHECK(guestfrag::parse_workload("scan:path").text() == "scan:path");
    CHECK(guestfrag::parse_workload("scan:mft").text() == "scan:mft");
    CHECK(guestfrag::parse_workload("scan").text() == "scan");
    CHECK_THROWS_AS(guestfrag::parse_workload("scan:size"), guestfrag::Error);
}

TEST_CASE("scan statistics are the hand-computed ones", "[estimate]") {
    const VolumeMap v = hand_volume();
    const IoStats s = guestfrag::summarize_ios(scan_ios(v, guestfrag::Workload::ScanOrder::Mft, MiB));

    // IOs (lbn, bytes, sectors): (2128,8192,16) (2848,12288,24) (2872,8192,16) (3648,8192,16) (2448,1024,2)
    CHECK(s.ios == 5);
    CHECK(s.bytes == 37888);  // 3·8192 + 12288 + 1024
    CHECK(s.mean_io_bytes == Approx(7577.6));

    // ioLength buckets (limits index: 1 ≤1024, 6 ≤8192, 7 ≤16383): 1024 → 1; 8192 ×3 → 6; 12288 → 7
    std::vector<std::uint64_t> lengths(18, 0);
    lengths[1] = 1;
    lengths[6] = 3;
    lengths[7] = 1;
    CHECK(s.io_length.counts() == lengths);

    // Seek distances start(this) − (start(prev) + sectors(prev) − 1):
    //   IO2: 2848 − (2128 + 16 − 1) = 705      → bucket ≤1000 (index 27)
    //   IO3: 2872 − (2848 + 24 − 1) = 1        → bucket ≤1 (index 17): sequential
    //   IO4: 3648 − (2872 + 16 − 1) = 761      → index 27
    //   IO5: 2448 − (3648 + 16 − 1) = −1215    → bucket ≤−1000 (index 5)
    std::vector<std::uint64_t> seeks(34, 0);
    seeks[5] = 1;
    seeks[17] = 1;
    seeks[27] = 2;
    CHECK(s.seek_distance.counts() == seeks);
    CHECK(s.sequential == 1);
    CHECK(s.sequential_percent == Approx(25.0));  // 1 of the 4 IOs that have a distance
    CHECK(s.near_sequential == 1);                // no other distance is within +1 … +8
    CHECK(s.near_sequential_percent == Approx(25.0));

    // SSD: 5 · 80 µs + 37888 B / 500 MB/s = 400 µs + 75.776 µs
    CHECK(s.device_seconds.ssd == Approx(475.776e-6).epsilon(1e-12));

    // Array: random (0.3 ms): IO1 (first) and IO5 (backwards); sequential (0.05 ms): IO3
    // (distance 1) and IO2, IO4 (705 and 761: forward gaps of 704 and 760 sectors < 2048 =
    // 1 MiB); transfer 37888 B / 1 GB/s = 37.888 µs. 0.6 ms + 0.15 ms + 37.888 µs.
    CHECK(s.device_seconds.array == Approx(787.888e-6).epsilon(1e-12));

    // HDD: transfer 37888 B / 150 MB/s. IO3 (distance 1) pays nothing more. IO1 (from LBN
    // 0) and IO5 (backwards) pay the rotational latency 30/7200 s and a seek of 0.5 ms +
    // 14.5 ms · √(sectors · 512 / 1e12) over 2128 and 1215 sectors. IO2 and IO4 skip forward
    // over 704 and 760 sectors: waiting for them to pass at 150 MB/s (2.403 and 2.594 ms)
    // is shorter than a seek and half a turn (≈ 4.68 ms), so they pay that.
    auto seek = [](double sectors) { return 0.5e-3 + 14.5e-3 * std::sqrt(sectors * 512 / 1e12); };
    const double hdd =
        37888 / 150e6 + 2 * (30.0 / 7200) + seek(2128) + seek(1215) + 704 * 512 / 150e6 + 760 * 512 / 150e6;
    // ≈ 0.2526 ms + 8.3333 ms + 2 · 0.5 ms + (15.1 + 11.4) µs + 2.4030 ms + 2.5941 ms ≈ 14.610 ms
    CHECK(s.device_seconds.hdd == Approx(hdd).epsilon(1e-12));
    CHECK(s.device_seconds.hdd == Approx(14.610e-3).epsilon(1e-4));
}

TEST_CASE("max-io splits extents and never crosses an extent boundary", "[estimate]") {
    const VolumeMap v = hand_volume();
    // 4 KiB: every cluster of the scan becomes one IO; the 1000-byte stream stays 1024.
    const std::vector<Io> four_k = {{2128, 4096}, {2136, 4096}, {2848, 4096}, {2856, 4096}, {2864, 4096},
                                    {2872, 4096}, {2880, 4096}, {3648, 4096}, {3656, 4096}, {2448, 1024}};
    CHECK(scan_ios(v, guestfrag::Workload::ScanOrder::Mft, 4096) == four_k);

    // 2560 bytes (5 sectors) does not divide a cluster: record 40's 12288-byte extent gives
    // 4 · 2560 + 2048, and record 41's first extent (8192) gives 3 · 2560 + 512.
    std::vector<Io> out;
    guestfrag::append_stream_ios(v, v.streams[3], 2560, out);
    CHECK(out == std::vector<Io>{{2848, 2560}, {2853, 2560}, {2858, 2560}, {2863, 2560}, {2868, 2048}});
    out.clear();
    guestfrag::append_stream_ios(v, v.streams[2], 2560, out);
    CHECK(out == std::vector<Io>{{2872, 2560},
                                 {2877, 2560},
                                 {2882, 2560},
                                 {2887, 512},
                                 {3648, 2560},
                                 {3653, 2560},
                                 {3658, 2560},
                                 {3663, 512}});

    CHECK_THROWS_AS(scan_ios(v, guestfrag::Workload::ScanOrder::Mft, 1000), guestfrag::Error);
    CHECK_THROWS_AS(scan_ios(v, guestfrag::Workload::ScanOrder::Mft, 0), guestfrag::Error);
    CHECK_FALSE(guestfrag::valid_max_io(4095));
    CHECK(guestfrag::valid_max_io(512));
}

TEST_CASE("contiguous runs are one extent and holes and the data's end still cut", "[estimate]") {
    VolumeMap v = hand_volume();
    // (0,500,2)(2,502,2): continue each other in VCN and LCN: one 16 KiB extent, one IO.
    // (4,hole,1) skipped; (5,505,1) starts a new extent.
    // (6,600,4): the size 6·4096 + 100 ends 100 bytes into it: one IO of 100 → 512 bytes.
    // (10,900,2) lies wholly past the size (preallocated): not read.
    const Stream s =
        stream(50, kData, "", 6 * 4096 + 100,
               {{0, 500, 2}, {2, 502, 2}, {4, kHole, 1}, {5, 505, 1}, {6, 600, 4}, {10, 900, 2}});
    std::vector<Io> out;
    guestfrag::append_stream_ios(v, s, MiB, out);
    // 500 → 2048 + 4000 = 6048; 505 → 6088; 600 → 6848; run at 900 lies past the end: unread.
    CHECK(out == std::vector<Io>{{6048, 16384}, {6088, 4096}, {6848, 512}});

    // A compressed-style layout: data, hole, data continuing on disk: two IOs, sequential.
    const Stream c =
        stream(51, kData, "", 32 * 4096, {{0, 700, 5}, {5, kHole, 11}, {16, 705, 5}, {21, kHole, 11}});
    out.clear();
    guestfrag::append_stream_ios(v, c, MiB, out);
    CHECK(out == std::vector<Io>{{7648, 20480}, {7688, 20480}});
    CHECK(guestfrag::seek_distance(out[0], out[1]) == 1);
}

TEST_CASE("a bare volume (offset 0) and 512-byte clusters map LCNs straight to sectors", "[estimate]") {
    VolumeMap v;
    v.cluster_size = 512;
    v.streams = {stream(30, kData, "", 1536, {{0, 7, 3}})};
    CHECK(scan_ios(v, guestfrag::Workload::ScanOrder::Mft, MiB) == std::vector<Io>{{7, 1536}});
}

TEST_CASE("summaries of empty and single-IO streams", "[estimate]") {
    const IoStats none = guestfrag::summarize_ios({});
    CHECK(none.ios == 0);
    CHECK(none.mean_io_bytes == 0);
    CHECK(none.sequential_percent == 0);
    CHECK(none.io_length.total() == 0);
    CHECK(none.device_seconds.hdd == 0);

    const std::vector<Io> one = {{0, 4096}};
    const IoStats s = guestfrag::summarize_ios(one);
    CHECK(s.ios == 1);
    CHECK(s.seek_distance.total() == 0);  // the first IO has no distance
    CHECK(s.sequential_percent == 0);
    // HDD first IO at LBN 0: seek over 0 sectors = settle 0.5 ms, + 30/7200 s + 4096 / 150e6.
    CHECK(s.device_seconds.hdd == Approx(0.5e-3 + 30.0 / 7200 + 4096 / 150e6).epsilon(1e-12));
}

TEST_CASE("an HDD serves a short forward skip by waiting for the platter, a long one by seeking",
          "[estimate]") {
    // IO2 starts 7 sectors after IO1's end (the next file in order, at its own cluster):
    // distance 8. IO3 starts 2,000,000 sectors (1.024 GB) after IO2's end.
    const std::vector<Io> ios = {{0, 1024}, {9, 4096}, {2000017, 4096}};
    const IoStats s = guestfrag::summarize_ios(ios);
    const double first = 0.5e-3 + 30.0 / 7200 + 1024 / 150e6;
    const double skip = 7 * 512 / 150e6 + 4096 / 150e6;  // 23.9 µs of passing sectors, no seek
    const double far = 0.5e-3 + 14.5e-3 * std::sqrt(2000001.0 * 512 / 1e12) + 30.0 / 7200 + 4096 / 150e6;
    CHECK(2000000 * 512 / 150e6 > far);  // passing 1 GB would take 6.8 s: it seeks
    CHECK(s.device_seconds.hdd == Approx(first + skip + far).epsilon(1e-12));
    CHECK(s.sequential == 0);  // vscsiStats' +1 only: the skip is in bucket ≤8
    CHECK(s.seek_distance.counts()[21] == 1);
}

TEST_CASE("trace reads each listed file's unnamed $DATA in order, counting missing paths",
          "[estimate][trace]") {
    const VolumeMap v = hand_volume();
    // \a.bin = record 40; \Windows\b.bin = record 41 (parent 45); \dir is a directory;
    // \empty has size 0 ($DATA present, no IO); \no\such.dll does not exist; lost.txt's
    // parent (99) is missing, so its path is "<orphan>\lost.txt", not "\lost.txt".
    const std::vector<std::string> paths = {"\\WINDOWS\\B.BIN", "/a.bin",  "\\no\\such.dll", "\\dir", "a.BIN",
                                            "\\no\\such.dll",   "\\empty", "\\lost.txt"};
    std::vector<Io> ios;
    guestfrag::GuestReader raw(v, *guestfrag::find_guest_profile("raw"), MiB,
                               [&ios](const Io& io) { ios.push_back(io); });
    std::vector<std::pair<std::uint64_t, bool>> handed;  // record, data outside it
    const guestfrag::TraceOutcome outcome =
        guestfrag::trace_reads(v, paths, [&](std::uint64_t record, const Stream* data) {
            handed.emplace_back(record, data != nullptr);
            if (data) raw.read(*data);
        });
    // Every file found is opened, \dir too, whose record holds all a reader gets from it.
    CHECK(handed == std::vector<std::pair<std::uint64_t, bool>>{
                        {41, true}, {40, true}, {42, false}, {40, true}, {43, true}});
    CHECK(outcome.paths == 8);
    CHECK(outcome.read == 4);  // b.bin, a.bin, a.BIN, empty
    CHECK(outcome.without_data == 1);
    CHECK(outcome.missing == 3);
    CHECK(outcome.missing_paths == std::vector<std::string>{"\\no\\such.dll", "\\lost.txt"});
    // b.bin's unnamed $DATA only (not :ads), then a.bin twice; \empty reads nothing.
    const std::vector<Io> expected = {{2872, 8192}, {3648, 8192}, {2848, 12288}, {2848, 12288}};
    CHECK(ios == expected);

    CHECK(guestfrag::fold_trace_path("C/Windows//") == "\\c\\windows");
    CHECK(guestfrag::fold_trace_path("\\") == "\\");
    CHECK(guestfrag::fold_trace_path("") == "\\");
}

TEST_CASE("workload names parse strictly", "[estimate]") {
    using guestfrag::Workload;
    CHECK(guestfrag::parse_workload("scan").kind == Workload::Kind::Scan);
    const Workload t = guestfrag::parse_workload("trace:/tmp/x:y.txt");
    CHECK(t.kind == Workload::Kind::Trace);
    CHECK(t.trace_source == "/tmp/x:y.txt");
    CHECK(t.text() == "trace:/tmp/x:y.txt");
    const Workload w = guestfrag::parse_workload("write:250");
    CHECK(w.kind == Workload::Kind::Write);
    CHECK(w.files == 250);
    CHECK(w.text() == "write:250");
    for (const char* bad :
         {"", "Scan", "trace:", "write:", "write:0", "write:-1", "write:12x", "write:10000001", "read"})
        CHECK_THROWS_AS(guestfrag::parse_workload(bad), guestfrag::Error);
}

TEST_CASE("near-sequential: seek distances +1 … +8 sectors, the sequential +1 among them", "[estimate]") {
    // Eight-sector (4 KiB) IOs: each starts at the previous start + 8 + (distance − 1).
    // Distances: +1, +2, +8, +9, 0, −7: near-sequential 3 (+1, +2, +8), sequential 1.
    std::vector<Io> ios{{1000, 4096}};
    for (const std::int64_t distance : {1, 2, 8, 9, 0, -7})
        ios.push_back({ios.back().lbn + 8 + distance - 1, 4096});
    const IoStats s = summarize_ios(ios);
    CHECK(s.sequential == 1);
    CHECK(s.near_sequential == 3);
    CHECK(s.near_sequential_percent == Approx(50.0));  // 3 of 6
    CHECK(summarize_ios(std::span(ios).first(1)).near_sequential_percent == 0);
}
