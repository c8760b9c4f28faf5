// SPDX-License-Identifier: GPL-2.0-or-later
// The write:N workload: file sizes sampled from the volume, NTFS-style allocation into a
// hand-built free-space layout, and the IOs that result. Every figure is worked out by hand.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/cluster_allocator.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/estimate/write_workload.hpp"

using guestfrag::AttrType;
using guestfrag::ClusterAllocator;
using guestfrag::ClusterSet;
using guestfrag::Extent;
using guestfrag::Io;
using guestfrag::Placement;
using guestfrag::Stream;
using guestfrag::VolumeMap;

namespace {

constexpr auto kData = static_cast<std::uint32_t>(AttrType::Data);

ClusterSet::interval_type clusters(std::int64_t lower, std::int64_t upper) {
    return ClusterSet::interval_type::right_open(lower, upper);
}

ClusterSet set_of(std::initializer_list<std::pair<std::int64_t, std::int64_t>> ranges) {
    ClusterSet s;
    for (const auto& [lo, hi] : ranges) s.add(clusters(lo, hi));
    return s;
}

Stream data(std::uint64_t record, std::string_view name, std::uint64_t size, std::vector<Extent> runs,
            Placement placement = Placement::Movable) {
    Stream s;
    s.mft_record = record;
    s.type = kData;
    s.name = name;  // a literal: Stream::name is a view
    s.size = size;
    s.allocated_size = size;
    s.extents = std::move(runs);
    s.placement = placement;
    return s;
}

/// 4 KiB clusters, volume at byte 1 MiB (cluster x = sector 2048 + 8x), 1000 clusters.
/// MFT zone [0,100). Free: [50,100) (inside the zone), [200,204), [300,310), [400,403),
/// [500,600). Files: the population for sizes is records 30, 31, 32 (movable unnamed
/// $DATA); record 2 (unmovable), record 10 (metadata record below 24), 31's named stream
/// and the sparse record 33 do not count.
VolumeMap free_space_volume() {
    VolumeMap v;
    v.partition = 1;
    v.partition_offset = 1 << 20;
    v.cluster_size = 4096;
    v.total_clusters = 1000;
    v.mft_zone = set_of({{0, 100}});
    v.free = set_of({{50, 100}, {200, 204}, {300, 310}, {400, 403}, {500, 600}});
    v.streams = {
        data(2, "", 1'000'000, {{0, 100, 245}}, Placement::Unmovable),
        data(10, "", 131072, {{0, 610, 32}}),
        data(30, "", 8192, {{0, 345, 2}}),
        data(31, "", 40960, {{0, 347, 10}}),
        data(31, "ads", 999, {{0, 357, 1}}),
        data(32, "", 20000, {{0, 358, 5}}),
        data(33, "", 16 << 20, {{0, 363, 2}, {2, Extent::kSparse, 4094}}),
    };
    v.streams.back().flags = Stream::kSparse;
    return v;
}

}  // namespace

TEST_CASE("allocator: first fit from the hint, wrapping to the volume start", "[estimate][write]") {
    ClusterAllocator a(set_of({{10, 20}, {30, 35}, {40, 42}}), 25);
    CHECK(a.free_clusters() == 17);
    // From 25: [30,35) holds 4 → 30..33; the hint moves to 34.
    CHECK(a.allocate(4) == std::vector<Extent>{{0, 30, 4}});
    CHECK(a.hint() == 34);
    // 2 clusters: [34,35) is too small, [40,42) fits.
    CHECK(a.allocate(2) == std::vector<Extent>{{0, 40, 2}});
    // 5: nothing at or after 42 → wrap: [10,20) → 10..14.
    CHECK(a.allocate(5) == std::vector<Extent>{{0, 10, 5}});
    CHECK(a.hint() == 15);
    // More than is free: nothing happens.
    CHECK(a.allocate(7).empty());
    CHECK(a.allocate(0).empty());
    CHECK(a.free_clusters() == 6);
    CHECK(a.remaining() == set_of({{15, 20}, {34, 35}}));
}

TEST_CASE("allocator: a free extent containing the hint counts as before it", "[estimate][write]") {
    // Only extents that start at or after the hint come first; [30,35) starts before 32.
    ClusterAllocator a(set_of({{10, 20}, {30, 35}}), 32);
    CHECK(a.allocate(3) == std::vector<Extent>{{0, 10, 3}});
}

TEST_CASE("allocator: no extent fits → split in address order from the hint, wrapping", "[estimate][write]") {
    ClusterAllocator a(set_of({{0, 3}, {10, 14}, {20, 22}}), 5);
    // 8 clusters, largest extent 4: take [10,14) whole, [20,22) whole, wrap, 2 of [0,3).
    CHECK(a.allocate(8) == std::vector<Extent>{{0, 10, 4}, {4, 20, 2}, {6, 0, 2}});
    CHECK(a.hint() == 2);
    CHECK(a.free_clusters() == 1);
    CHECK(a.remaining() == set_of({{2, 3}}));
}

TEST_CASE("write sizes follow the volume's movable files with a fixed stride", "[estimate][write]") {
    const VolumeMap v = free_space_volume();
    // P = [8192 (30), 40960 (31), 20000 (32)], |P| = 3; file i takes P[⌊3i/N⌋].
    CHECK(guestfrag::write_file_sizes(v, 3) == std::vector<std::uint64_t>{8192, 40960, 20000});
    // N = 2: ⌊0⌋ = 0, ⌊1.5⌋ = 1.
    CHECK(guestfrag::write_file_sizes(v, 2) == std::vector<std::uint64_t>{8192, 40960});
    // N = 5: 0, ⌊0.6⌋ = 0, ⌊1.2⌋ = 1, ⌊1.8⌋ = 1, ⌊2.4⌋ = 2.
    CHECK(guestfrag::write_file_sizes(v, 5) == std::vector<std::uint64_t>{8192, 8192, 40960, 40960, 20000});

    VolumeMap empty = v;
    empty.streams.resize(2);  // only the unmovable stream and the metadata record
    CHECK_THROWS_AS(guestfrag::write_file_sizes(empty, 3), guestfrag::Error);
}

TEST_CASE("write:N allocates outside the MFT zone first and fragments when free space is",
          "[estimate][write]") {
    const VolumeMap v = free_space_volume();
    // Outside the zone: [200,204) 4, [300,310) 10, [400,403) 3, [500,600) 100 = 117 clusters.
    // The first file looks from the zone's end, cluster 100.
    //  f1   8192 B =   2 cl: [200,204) fits         → (0,200,2)                     hint 202
    //  f2  40960 B =  10 cl: [202,204) too small; [300,310) → (0,300,10)           hint 310
    //  f3  20000 B =   5 cl: [400,403) too small; [500,600) → (0,500,5)            hint 505
    //  f4 409600 B = 100 cl: left 2 + 3 + 95 = 100, no extent holds 100 → split from the
    //                        hint: (0,505,95), wrap: (95,202,2), (97,400,3)         hint 403
    //  f5   5000 B =   2 cl: nothing left outside → the zone's free [50,100) joins;
    //                        nothing starts at/after 403 → wrap: (0,50,2)
    //  f6 245760 B =  60 cl: 48 free → does not fit: skipped
    //  f7   4096 B =   1 cl: from hint 52: [52,100) → (0,52,1)
    const std::vector<std::uint64_t> sizes = {8192, 40960, 20000, 409600, 5000, 245760, 4096};
    const guestfrag::WriteIos w = guestfrag::write_ios(v, sizes, 1 << 20);
    CHECK(w.outcome.files == 7);
    CHECK(w.outcome.files_written == 6);
    CHECK(w.outcome.bytes_written == 8192 + 40960 + 20000 + 409600 + 5000 + 4096);
    CHECK(w.outcome.fragments == 8);
    CHECK(w.outcome.fragmented_files == 1);

    // Sectors: cluster x → 2048 + 8x. f3 ends with 20000 → 20480 bytes; f5 5000 → 5120.
    // Every IO writes: the files are being created.
    const std::vector<Io> expected = {
        {2048 + 1600, 8192, true},       // f1 at 200
        {2048 + 2400, 40960, true},      // f2 at 300
        {2048 + 4000, 20480, true},      // f3 at 500
        {2048 + 4040, 95 * 4096, true},  // f4 at 505: 389120 bytes
        {2048 + 1616, 2 * 4096, true},   // f4 at 202
        {2048 + 3200, 3 * 4096, true},   // f4 at 400
        {2048 + 400, 5120, true},        // f5 at 50
        {2048 + 416, 4096, true},        // f7 at 52
    };
    CHECK(w.ios == expected);

    // f3 → f4: 6088 − (6048 + 40 − 1) = 1: the hint makes consecutive files sequential.
    // f5 → f7: 2464 − (2448 + 10 − 1) = 7: f5's last IO ends inside its second cluster.
    const guestfrag::IoStats s = guestfrag::summarize_ios(w.ios);
    CHECK(s.sequential == 1);
    CHECK(guestfrag::seek_distance(w.ios[6], w.ios[7]) == 7);

    // The same files with 64 KiB IOs: f4's 95-cluster run (380 KiB) becomes 5 · 64 KiB + 60 KiB.
    const guestfrag::WriteIos small = guestfrag::write_ios(v, sizes, 64 << 10);
    CHECK(small.ios.size() == 13);  // 1 + 1 + 1 + (6 + 1 + 1) + 1 + 1
    CHECK(small.ios[3] == Io{6088, 65536, true});
    CHECK(small.ios[8] == Io{6088 + 5 * 128, 61440, true});
}

TEST_CASE("write:N on a volume without an MFT zone starts at cluster 0", "[estimate][write]") {
    VolumeMap v = free_space_volume();
    v.mft_zone.clear();
    // [50,100) is ordinary free space now and comes first from hint 0.
    const guestfrag::WriteIos w = guestfrag::write_ios(v, std::vector<std::uint64_t>{8192}, 1 << 20);
    CHECK(w.ios == std::vector<Io>{{2048 + 400, 8192, true}});
}
