// SPDX-License-Identifier: GPL-2.0-or-later
// The growth model (thin growth, clone delta growth, reclaimable) on hand-made layers.
#include <catch2/catch.hpp>

#include "core/plan/growth.hpp"

using namespace guestfrag;

namespace {

constexpr std::uint64_t K = 1024;
constexpr std::uint64_t M = 1024 * K;

ByteSet::interval_type b(std::uint64_t lo, std::uint64_t hi) { return ByteSet::interval_type::right_open(lo, hi); }

Move to(std::int64_t lcn, std::int64_t clusters) { return {64, "$DATA", 0, 900, lcn, clusters}; }

/// A 4 MiB volume at disk offset 1 MiB, 4 KiB clusters; granule 64 KiB = 16 clusters, so
/// volume granule k is clusters [16k, 16k + 16).
VolumeMap volume() {
    VolumeMap v;
    v.partition_offset = M;
    v.cluster_size = 4096;
    v.total_clusters = 1024;
    return v;
}

/// Top layer (64 KiB granules): volume granule 0. Parent (512-byte granules): granule 0,
/// granule 2 whole, and one sector inside cluster 64 (granule 4).
std::vector<Layer> layers() {
    Layer top;
    top.depth = 0;
    top.granule_size = 64 * K;
    top.allocated.add(b(M, M + 64 * K));
    Layer parent;
    parent.depth = 1;
    parent.granule_size = 512;
    parent.allocated.add(b(M, M + 64 * K));
    parent.allocated.add(b(M + 128 * K, M + 192 * K));
    parent.allocated.add(b(M + 256 * K + 512, M + 256 * K + 1024));
    return {top, parent};
}

}  // namespace

TEST_CASE("growth: each written granule counts once, by where its data lives", "[plan][growth]") {
    Plan plan;
    plan.moves = {
        to(2, 2),    // granule 0: top has it → nothing
        to(40, 2),   // granule 2: only the parent → copy-on-write, 64 KiB
        to(44, 2),   // granule 2 again → nothing more
        to(70, 2),   // granule 4: the parent holds one sector of it → 64 KiB
        to(100, 1),  // granule 6: nobody → thin growth 64 KiB
        to(111, 2),  // clusters 111-112: granule 6 (counted) and granule 7 → 64 KiB
    };
    const GrowthFigures g = plan_growth(volume(), layers(), plan);
    CHECK(g.thin_growth_bytes == 128 * K);
    CHECK(g.clone_delta_growth_bytes == 128 * K);

    // At 1 MiB granules everything falls in disk bytes [1M, 2M), which the top layer holds.
    CHECK(plan_growth(volume(), layers(), plan, M) == GrowthFigures{});
    // Without layers nothing is allocated: every written granule (of the cluster size) grows.
    CHECK(plan_growth(volume(), {}, plan) == GrowthFigures{11 * 4 * K, 0});
}

TEST_CASE("growth model answers before it writes", "[plan][growth]") {
    GrowthModel model(volume(), layers());
    CHECK(model.granule() == 64 * K);
    CHECK(model.would_add(100, 1) == GrowthFigures{64 * K, 0});
    model.write(100, 1);
    CHECK(model.would_add(101, 5) == GrowthFigures{});  // same granule
    // Clusters 40-69: granules 2 (parent only), 3 (nobody) and 4 (parent only).
    CHECK(model.would_add(40, 30) == GrowthFigures{64 * K, 128 * K});
    CHECK(model.total() == GrowthFigures{64 * K, 0});
    CHECK(model.top_allocated(b(M + 60 * K, M + 70 * K)));
    CHECK_FALSE(model.top_allocated(b(M + 64 * K, M + 128 * K)));
    // After the write, granule 6 belongs to the top layer as well.
    ByteSet expected = layers()[0].allocated;
    expected.add(b(M + 6 * 64 * K, M + 7 * 64 * K));
    CHECK(model.top_allocation_after() == expected);
}

TEST_CASE("clusters inside top-layer granules", "[plan][growth]") {
    std::vector<Layer> l = layers();
    l[0].allocated.add(b(M + 100 * K, M + 104 * K));  // part of granule 1 → all of it counts
    const ClusterSet inside = GrowthModel(volume(), l).clusters_in_top_granules();
    CHECK(inside == ClusterSet(ClusterSet::interval_type::right_open(0, 32)));

    // A volume at byte 512: clusters straddle 4 KiB granules; only clusters whose every byte
    // lies in allocated granules count.
    VolumeMap odd = volume();
    odd.partition_offset = 512;
    Layer top;
    top.granule_size = 4 * K;
    top.allocated.add(b(0, 8 * K + 512));  // granules 0-2 (bytes 0 .. 12K)
    const ClusterSet c = GrowthModel(odd, {top}).clusters_in_top_granules();
    // Cluster 0 is bytes 512..4608, cluster 1 4608..8704: inside; cluster 2 ends at 12800.
    CHECK(c == ClusterSet(ClusterSet::interval_type::right_open(0, 2)));
}

TEST_CASE("reclaimable bytes: allocated bytes in wholly free granules", "[plan][growth]") {
    // The layer_usage_test fixture: 64 KiB granules, reclaimable is granule 0 only.
    VolumeMap v = volume();
    v.free.add(ClusterSet::interval_type::right_open(0, 16));
    v.free.add(ClusterSet::interval_type::right_open(100, 116));
    v.free.add(ClusterSet::interval_type::right_open(300, 301));
    ByteSet allocated;
    allocated.add(b(0, 64 * K));
    allocated.add(b(M, M + 128 * K));
    allocated.add(b(M + 384 * K, M + 512 * K));
    CHECK(reclaimable_bytes(v, v.free, allocated, 64 * K) == 64 * K);
    // At 4 KiB granules every free allocated cluster counts: clusters 0-15 and 100-115
    // (bytes 400K..464K, of which 400K..512K is allocated).
    CHECK(reclaimable_bytes(v, v.free, allocated, 4 * K) == 64 * K + 64 * K);
    CHECK(whole_granules_touching(allocated, 256 * K) ==
          [] {
              ByteSet s;
              s.add(b(0, 256 * K));
              s.add(b(M, M + 512 * K));
              return s;
          }());
}

TEST_CASE("growth: a VHD differencing top grows by whole blocks, not by its 512-byte sectors",
          "[plan][growth]") {
    // The top layer stores one sector of disk block [0, 2M) (so the block is in its file);
    // its sector bitmap granule is 512 bytes, its growth unit the 2 MiB block.
    Layer top;
    top.granule_size = 512;
    top.growth_unit = 2 * M;
    top.allocated.add(b(M + 4 * K, M + 4 * K + 512));
    Plan plan;
    plan.moves = {
        to(10, 1),   // disk 1M+40K: block 0, already in the file → nothing
        to(300, 1),  // disk 1M+1200K = 2.17M: block 1, nowhere → the file grows by 2 MiB
        to(310, 2),  // block 1 again → nothing more
    };
    const GrowthFigures g = plan_growth(volume(), {top}, plan);
    CHECK(g.thin_growth_bytes == 2 * M);
    CHECK(g.clone_delta_growth_bytes == 0);
    CHECK(GrowthModel(volume(), {top}, 0).granule() == 2 * M);
}
