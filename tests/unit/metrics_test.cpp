// SPDX-License-Identifier: GPL-2.0-or-later
// docs/design.md §3 metrics on hand-built VolumeMaps. Every expected number is worked out in the
// comment above it; docs/metrics.md walks through the first fixture the same way.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "analyzers/fragmentation.hpp"
#include "core/model/free_space.hpp"

using guestfrag::analyze_file_fragmentation;
using guestfrag::analyze_free_space;
using guestfrag::AttrType;
using guestfrag::ClusterSet;
using guestfrag::Extent;
using guestfrag::FileFragmentation;
using guestfrag::FreeExtentBucket;
using guestfrag::FreeSpaceFragmentation;
using guestfrag::most_fragmented_streams;
using guestfrag::Stream;
using guestfrag::VolumeMap;
using guestfrag::zfs_free_extent_penalty;

namespace {

constexpr std::int64_t kHole = Extent::kSparse;
constexpr auto kData = static_cast<std::uint32_t>(AttrType::Data);
constexpr auto kIndexAllocation = static_cast<std::uint32_t>(AttrType::IndexAllocation);
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

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

/// The worked example of docs/metrics.md. 4 KiB clusters.
///
///  stream                         runs (vcn, lcn, clusters)              fragments  allocated
///  A  0  $MFT       $DATA          (0,16,8) (8,24,8) (16,5000,16)         2          32
///        16+8 = 24 merges; 24+8 = 32 ≠ 5000 → new
///  B  30 \a.txt     $DATA          (0,100,4) (4,104,2)                    1          6
///        100+4 = 104 merges
///  C  31 \dir\b.bin $DATA          (0,200,4) (4,300,4) (8,-1,8) (16,400,1) 3          9
///        204 ≠ 300 → new; hole skipped; 304 ≠ 400 → new
///  D  31 \dir\b.bin $DATA:ads      (0,600,1) (1,650,1)                    2          2
///  E  33 \sparse.dat $DATA         (0,-1,16)                              0          0
///  F  40 \dir       $INDEX_ALLOCATION:$I30  (0,700,1)                     1          1
///  (34 \small.txt is resident: no stream at all; 5 is the root)
VolumeMap worked_example() {
    VolumeMap v;
    v.cluster_size = 4096;
    v.files = {
        {0, 5, false, "$MFT"},        {5, 5, true, "."},
        {30, 5, false, "a.txt"},      {31, 40, false, "b.bin"},
        {33, 5, false, "sparse.dat"}, {34, 5, false, "small.txt"},
        {40, 5, true, "dir"},
    };
    v.streams = {
        stream(0, kData, "", 32 * 4096, {{0, 16, 8}, {8, 24, 8}, {16, 5000, 16}}),
        stream(30, kData, "", 6 * 4096, {{0, 100, 4}, {4, 104, 2}}),
        stream(31, kData, "", 17 * 4096, {{0, 200, 4}, {4, 300, 4}, {8, kHole, 8}, {16, 400, 1}}),
        stream(31, kData, "ads", 2 * 4096, {{0, 600, 1}, {1, 650, 1}}),
        stream(33, kData, "", 16 * 4096, {{0, kHole, 16}}),
        stream(40, kIndexAllocation, "$I30", 4096, {{0, 700, 1}}),
    };
    return v;
}

ClusterSet::interval_type clusters(std::int64_t lower, std::int64_t upper) {
    return ClusterSet::interval_type::right_open(lower, upper);
}

}  // namespace

TEST_CASE("file fragmentation of the worked example", "[metrics][files]") {
    const FileFragmentation f = analyze_file_fragmentation(worked_example());

    // FileEntry count: records 0, 5, 30, 31, 33, 34, 40.
    CHECK(f.files == 7);
    // Streams with ≥ 1 fragment: A, B, C, D, F (E has 0).
    CHECK(f.streams == 5);
    // Fragments > 1: A (2), C (3), D (2).
    CHECK(f.fragmented_streams == 3);
    // 2 + 1 + 3 + 2 + 1 = 9.
    CHECK(f.fragments == 9);
    // (2−1) + (1−1) + (3−1) + (2−1) + (1−1) = 1 + 0 + 2 + 1 + 0 = 4.
    CHECK(f.excess_fragments == 4);
    // Distinct records of A, C, D: {0, 31}.
    CHECK(f.fragmented_files == 2);
    // Distinct records of A, B, C, D, F: {0, 30, 31, 40}; 33 owns only the all-hole E.
    CHECK(f.files_with_streams == 4);
    // 9 fragments / 4 files = 2.25.
    CHECK(f.average_fragments_per_file == Approx(2.25));
    // Allocated clusters of A, C, D: 32 + 9 + 2 = 43; 43 · 4096 = 176128 bytes.
    CHECK(f.fragmented_bytes == 176128);
    // UltraDefrag: total = 2 (A) + 1 (B, unfragmented) + 3 (C) + 2 (D) + 1 (F, unfragmented) = 9,
    //              bad   = 2 (A) + 3 (C) + 2 (D) = 7;  100 · 7 / 9 = 77.777…%.
    CHECK(f.fragmentation_percent == Approx(700.0 / 9.0).epsilon(1e-12));
    // A is record 0's unnamed $DATA.
    CHECK(f.mft_fragments == 2);
    // No \pagefile.sys.
    CHECK(f.pagefile_fragments == 0);
}

TEST_CASE("most fragmented streams of the worked example", "[metrics][files]") {
    const VolumeMap v = worked_example();
    const Stream* a = &v.streams[0];
    const Stream* c = &v.streams[2];
    const Stream* d = &v.streams[3];
    // Fragmented: C (3), A (2, 131072 B), D (2, 8192 B); A beats D on size. B, E, F are not
    // fragmented and never listed.
    CHECK(most_fragmented_streams(v, 10) == std::vector<const Stream*>{c, a, d});
    CHECK(most_fragmented_streams(v, 3) == std::vector<const Stream*>{c, a, d});
    CHECK(most_fragmented_streams(v, 2) == std::vector<const Stream*>{c, a});
    CHECK(most_fragmented_streams(v, 1) == std::vector<const Stream*>{c});
    CHECK(most_fragmented_streams(v, 0).empty());
}

TEST_CASE("most fragmented streams break ties by size, record, then label", "[metrics][files]") {
    VolumeMap v;
    v.cluster_size = 4096;
    const std::vector<Extent> two = {{0, 10, 1}, {1, 20, 1}};
    // Deliberately out of order: the ranking must not depend on the input order.
    v.streams = {
        stream(9, kData, "b", 4096, two),                             // 2 fragments, 4096 B, rec 9, "$DATA:b"
        stream(7, kData, "", 4096, two),                              // 2 fragments, 4096 B, rec 7
        stream(99, kData, "", 1, {{0, 1, 1}, {1, 3, 1}, {2, 5, 1}}),  // 3 fragments: first whatever its size
        stream(9, kData, "a", 4096, two),                             // 2 fragments, 4096 B, rec 9, "$DATA:a"
        stream(8, kData, "", 8192, two),                              // 2 fragments, 8192 B: before 7 and 9
        stream(1, kData, "", 1 << 20, {{0, 10, 256}}),                // unfragmented: never listed
    };
    const auto& s = v.streams;
    // 99 (3 fragments) > 8 (2, larger) > 7 (2, 4096, lower record) > 9 "$DATA:a" > 9 "$DATA:b".
    CHECK(most_fragmented_streams(v, 100) == std::vector<const Stream*>{&s[2], &s[4], &s[1], &s[3], &s[0]});
    // Keeping only 3 evicts the weakest from the bounded heap.
    CHECK(most_fragmented_streams(v, 3) == std::vector<const Stream*>{&s[2], &s[4], &s[1]});
    CHECK(most_fragmented_streams(v, 4) == std::vector<const Stream*>{&s[2], &s[4], &s[1], &s[3]});
}

TEST_CASE("the page file is pagefile.sys in the root in any case, unnamed $DATA only", "[metrics][files]") {
    VolumeMap v;
    v.cluster_size = 4096;
    v.files = {
        {5, 5, true, "."},
        {20, 5, false, "PageFile.SYS"},   // \PageFile.SYS: the page file
        {21, 22, false, "pagefile.sys"},  // \Windows\pagefile.sys: not at the root
        {22, 5, true, "Windows"},
    };
    v.streams = {
        // 800+2 ≠ 900, 900+2 ≠ 1000, 1000+2 ≠ 1100 → 4 fragments.
        stream(20, kData, "", 8 * 4096, {{0, 800, 2}, {2, 900, 2}, {4, 1000, 2}, {6, 1100, 2}}),
        // Named stream of the page file: 3 fragments, not the page file's $DATA.
        stream(20, kData, "x", 3 * 4096, {{0, 5000, 1}, {1, 6000, 1}, {2, 7000, 1}}),
        // The nested file: 2 fragments.
        stream(21, kData, "", 2 * 4096, {{0, 2000, 1}, {1, 3000, 1}}),
    };
    const FileFragmentation f = analyze_file_fragmentation(v);
    CHECK(f.pagefile_fragments == 4);
    CHECK(f.mft_fragments == 0);  // no record 0 here
    // 4 + 3 + 2 = 9 fragments over records {20, 21}, all three streams fragmented:
    // total = bad = 9 → 100 %.
    CHECK(f.fragments == 9);
    CHECK(f.fragmented_files == 2);
    CHECK(f.fragmentation_percent == Approx(100.0));
}

TEST_CASE("MFT and page file figures use the unnamed $DATA only", "[metrics][files]") {
    constexpr auto kBitmap = static_cast<std::uint32_t>(AttrType::Bitmap);
    VolumeMap v;
    v.cluster_size = 4096;
    v.files = {{0, 5, false, "$MFT"}, {5, 5, true, "."}, {20, 5, false, "pagefile.sys"}};
    const std::vector<Extent> three = {{0, 10, 1}, {1, 20, 1}, {2, 30, 1}};  // 3 fragments
    // $MFT::$BITMAP and a named stream of the page file, but neither has an unnamed $DATA.
    v.streams = {stream(0, kBitmap, "", 3 * 4096, three), stream(20, kData, "x", 3 * 4096, three)};
    FileFragmentation f = analyze_file_fragmentation(v);
    CHECK(f.mft_fragments == 0);
    CHECK(f.pagefile_fragments == 0);
    CHECK(f.fragments == 6);  // both still count as streams: 3 + 3

    // Now with $MFT's $DATA in two runs, (0,100,4) (4,200,4): 104 ≠ 200 → 2 fragments.
    v.streams.insert(v.streams.begin(), stream(0, kData, "", 8 * 4096, {{0, 100, 4}, {4, 200, 4}}));
    f = analyze_file_fragmentation(v);
    CHECK(f.mft_fragments == 2);
    CHECK(f.pagefile_fragments == 0);
}

TEST_CASE("an empty volume has no fragmentation and no NaN", "[metrics][files][free]") {
    const VolumeMap v;
    const FileFragmentation f = analyze_file_fragmentation(v);
    CHECK(f.files == 0);
    CHECK(f.streams == 0);
    CHECK(f.fragments == 0);
    CHECK(f.fragmentation_percent == 0.0);
    CHECK(f.average_fragments_per_file == 0.0);
    CHECK(most_fragmented_streams(v, 5).empty());

    const FreeSpaceFragmentation free = analyze_free_space(v);
    CHECK(free.extents == 0);
    CHECK(free.free_clusters == 0);
    CHECK(free.largest_extent_clusters == 0);
    CHECK(free.average_extent_clusters == 0.0);
    CHECK(free.fragmentation_percent == 0.0);
    CHECK(free.histogram.empty());
}

TEST_CASE("all-sparse streams are not counted", "[metrics][files]") {
    VolumeMap v;
    v.cluster_size = 4096;
    v.files = {{5, 5, true, "."}, {40, 5, false, "sparse"}};
    v.streams = {stream(40, kData, "", 1 << 30, {{0, kHole, 262144}})};
    const FileFragmentation f = analyze_file_fragmentation(v);
    CHECK(f.files == 2);
    CHECK(f.streams == 0);
    CHECK(f.files_with_streams == 0);
    CHECK(f.fragments == 0);
    CHECK(f.excess_fragments == 0);  // 0 − 1 must not wrap around
    CHECK(f.fragmentation_percent == 0.0);
    CHECK(f.average_fragments_per_file == 0.0);
}

TEST_CASE("distinct files are counted even when streams are not sorted", "[metrics][files]") {
    VolumeMap v;
    v.cluster_size = 4096;
    const std::vector<Extent> two = {{0, 10, 1}, {1, 20, 1}};
    const std::vector<Extent> one = {{0, 10, 2}};
    // Records 3, 1, 3, 2, 1 → distinct {1, 2, 3}; fragmented ones 3, 1, 1 → {1, 3}.
    v.streams = {stream(3, kData, "", 1, two), stream(1, kData, "", 1, two), stream(3, kData, "x", 1, one),
                 stream(2, kData, "", 1, one), stream(1, kData, "y", 1, two)};
    const FileFragmentation f = analyze_file_fragmentation(v);
    CHECK(f.files_with_streams == 3);
    CHECK(f.fragmented_files == 2);
    // 2+2+1+1+2 = 8 fragments / 3 files.
    CHECK(f.average_fragments_per_file == Approx(8.0 / 3.0));
}

TEST_CASE("huge streams do not overflow byte counts", "[metrics][files]") {
    VolumeMap v;
    v.cluster_size = 4096;  // 2^12
    const std::int64_t half = std::int64_t{1} << 39;
    // Two streams of 2 fragments and 2 · 2^39 = 2^40 clusters each: 2^40 · 2^12 = 2^52 bytes each,
    // 2^53 bytes in all — beyond 32 bits, well inside 64.
    v.streams = {
        stream(1, kData, "", std::uint64_t{1} << 52, {{0, 0, half}, {half, 2 * half + 1, half}}),
        stream(2, kData, "", std::uint64_t{1} << 52, {{0, 4 * half, half}, {half, 6 * half, half}}),
    };
    CHECK(analyze_file_fragmentation(v).fragmented_bytes == std::uint64_t{1} << 53);

    // 2 MiB clusters (2^21) and 2^62 clusters: 2^83 bytes cannot be represented → saturates.
    v.cluster_size = 2 * MiB;
    const std::int64_t quarter = std::int64_t{1} << 61;
    v.streams = {stream(1, kData, "", 0, {{0, 0, quarter}, {quarter, quarter + 1, quarter}})};
    CHECK(analyze_file_fragmentation(v).fragmented_bytes == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("ZFS penalties follow the design table row by row", "[metrics][free]") {
    // "≤ limit" rows: a size gets the first row whose limit is ≥ it.
    CHECK(zfs_free_extent_penalty(0) == 100);
    CHECK(zfs_free_extent_penalty(512) == 100);
    CHECK(zfs_free_extent_penalty(1 * KiB) == 100);
    CHECK(zfs_free_extent_penalty(1 * KiB + 1) == 98);
    CHECK(zfs_free_extent_penalty(2 * KiB) == 98);
    CHECK(zfs_free_extent_penalty(2 * KiB + 1) == 95);
    CHECK(zfs_free_extent_penalty(4 * KiB) == 95);
    CHECK(zfs_free_extent_penalty(8 * KiB) == 90);
    CHECK(zfs_free_extent_penalty(12 * KiB) == 80);  // ZFS's highbit rule would say 90
    CHECK(zfs_free_extent_penalty(16 * KiB) == 80);
    CHECK(zfs_free_extent_penalty(32 * KiB) == 70);
    CHECK(zfs_free_extent_penalty(64 * KiB) == 60);
    CHECK(zfs_free_extent_penalty(128 * KiB) == 50);
    CHECK(zfs_free_extent_penalty(256 * KiB) == 40);
    CHECK(zfs_free_extent_penalty(512 * KiB) == 30);
    CHECK(zfs_free_extent_penalty(1 * MiB) == 20);
    CHECK(zfs_free_extent_penalty(1 * MiB + 1) == 15);
    CHECK(zfs_free_extent_penalty(2 * MiB) == 15);
    CHECK(zfs_free_extent_penalty(4 * MiB) == 10);
    CHECK(zfs_free_extent_penalty(8 * MiB) == 5);
    // Between the last "≤" row and "≥ 16M": keeps 5.
    CHECK(zfs_free_extent_penalty(8 * MiB + 1) == 5);
    CHECK(zfs_free_extent_penalty(16 * MiB - 1) == 5);
    CHECK(zfs_free_extent_penalty(16 * MiB) == 0);
    CHECK(zfs_free_extent_penalty(std::numeric_limits<std::uint64_t>::max()) == 0);
}

TEST_CASE("free space of extents of 1, 3, 256 and 5000 clusters", "[metrics][free]") {
    VolumeMap v;
    v.cluster_size = 4096;
    v.free.add(clusters(10, 11));      //    1 cluster  =      4,096 B
    v.free.add(clusters(20, 23));      //    3 clusters =     12,288 B
    v.free.add(clusters(100, 356));    //  256 clusters =  1,048,576 B
    v.free.add(clusters(1000, 6000));  // 5000 clusters = 20,480,000 B
    const FreeSpaceFragmentation f = analyze_free_space(v);

    CHECK(f.extents == 4);
    CHECK(f.free_clusters == 1 + 3 + 256 + 5000);  // 5260
    CHECK(f.largest_extent_clusters == 5000);
    CHECK(f.average_extent_clusters == Approx(5260.0 / 4.0));  // 1315

    // Buckets = largest power of two ≤ bytes:
    //   4,096 → 4,096;  12,288 → 8,192;  1,048,576 → 1,048,576;
    //   20,480,000 → 16,777,216 (2^24 ≤ 20,480,000 < 2^25 = 33,554,432).
    const std::vector<FreeExtentBucket> expected = {
        {4096, 1, 4096}, {8192, 1, 12288}, {1048576, 1, 1048576}, {16777216, 1, 20480000}};
    REQUIRE(f.histogram.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(f.histogram[i].min_bytes == expected[i].min_bytes);
        CHECK(f.histogram[i].extents == expected[i].extents);
        CHECK(f.histogram[i].bytes == expected[i].bytes);
    }

    // Penalties: 4,096 ≤ 4K → 95;  12,288 ≤ 16K → 80;  1,048,576 ≤ 1M → 20;  20,480,000 ≥ 16M → 0.
    // Σ bytes·penalty = 4,096·95 + 12,288·80 + 1,048,576·20 + 0
    //                 = 389,120 + 983,040 + 20,971,520 = 22,343,680
    // Σ bytes         = 4,096 + 12,288 + 1,048,576 + 20,480,000 = 21,544,960
    // percent         = 22,343,680 / 21,544,960 = (÷4096) 5455 / 5260 = 1.03707…
    CHECK(f.fragmentation_percent == Approx(5455.0 / 5260.0).epsilon(1e-12));
}

TEST_CASE("free space buckets gather extents and the 8M–16M gap keeps penalty 5", "[metrics][free]") {
    VolumeMap v;
    v.cluster_size = 4096;
    v.free.add(clusters(0, 2));          //    2 clusters =      8,192 B: bucket 8 KiB, penalty 90
    v.free.add(clusters(10, 13));        //    3 clusters =     12,288 B: bucket 8 KiB, penalty 80
    v.free.add(clusters(100, 3100));     // 3000 clusters = 12,288,000 B: bucket 8 MiB, penalty 5 (gap)
    v.free.add(clusters(4000, 6048));    // 2048 clusters =  8,388,608 B: bucket 8 MiB, penalty 5
    v.free.add(clusters(10000, 14096));  // 4096 clusters = 16,777,216 B: bucket 16 MiB, penalty 0
    const FreeSpaceFragmentation f = analyze_free_space(v);

    CHECK(f.extents == 5);
    CHECK(f.free_clusters == 2 + 3 + 3000 + 2048 + 4096);  // 9149
    CHECK(f.largest_extent_clusters == 4096);

    const std::vector<FreeExtentBucket> expected = {{8 * KiB, 2, 8192 + 12288},        // 20,480
                                                    {8 * MiB, 2, 12288000 + 8388608},  // 20,676,608
                                                    {16 * MiB, 1, 16777216}};
    REQUIRE(f.histogram.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        CHECK(f.histogram[i].min_bytes == expected[i].min_bytes);
        CHECK(f.histogram[i].extents == expected[i].extents);
        CHECK(f.histogram[i].bytes == expected[i].bytes);
    }

    // In clusters (every size is a multiple of 4096, which cancels):
    //   Σ clusters·penalty = 2·90 + 3·80 + 3000·5 + 2048·5 + 4096·0 = 180 + 240 + 15000 + 10240 = 25660
    //   Σ clusters         = 9149
    //   percent            = 25660 / 9149 = 2.8046…
    CHECK(f.fragmentation_percent == Approx(25660.0 / 9149.0).epsilon(1e-12));
}

TEST_CASE("small clusters and huge free extents", "[metrics][free]") {
    VolumeMap v;
    v.cluster_size = 512;
    v.free.add(clusters(0, 1));  // 512 B: bucket 512, penalty 100
    FreeSpaceFragmentation f = analyze_free_space(v);
    REQUIRE(f.histogram.size() == 1);
    CHECK(f.histogram[0].min_bytes == 512);
    CHECK(f.fragmentation_percent == Approx(100.0));

    // 2^62 clusters of 2 MiB: 2^83 bytes saturate to 2^64 − 1, which lies in bucket 2^63;
    // penalty 0 → 0 %. Cluster counts stay exact.
    v.cluster_size = 2 * MiB;
    v.free.clear();
    v.free.add(clusters(0, std::int64_t{1} << 62));
    f = analyze_free_space(v);
    CHECK(f.free_clusters == std::uint64_t{1} << 62);
    CHECK(f.largest_extent_clusters == std::uint64_t{1} << 62);
    REQUIRE(f.histogram.size() == 1);
    CHECK(f.histogram[0].min_bytes == std::uint64_t{1} << 63);
    CHECK(f.histogram[0].bytes == std::numeric_limits<std::uint64_t>::max());
    CHECK(f.fragmentation_percent == 0.0);
}
