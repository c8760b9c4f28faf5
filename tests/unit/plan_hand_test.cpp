// SPDX-License-Identifier: GPL-2.0-or-later
// The strategies on small hand-built volumes whose best plans are worked out by hand.
#include <catch2/catch.hpp>

#include "core/plan/apply.hpp"
#include "core/plan/planner.hpp"
#include "support/hand_volume.hpp"

using namespace guestfrag;

namespace {

using test::empty_volume;
using test::r;
using test::stream;

/// A raw-file-like top layer with everything in [0, bytes) allocated.
std::vector<Layer> top_layer(std::uint64_t granule, std::uint64_t bytes) {
    Layer l;
    l.granule_size = granule;
    l.allocated.add(ByteSet::interval_type::right_open(0, bytes));
    return {l};
}

/// The hand-worked examples of docs/planner.md §5 and §6 place by size; plan_order_test.cpp
/// works the other orders.
Plan plan(const VolumeMap& v, const std::vector<Layer>& layers, PlanOptions options) {
    if (takes_order(options.strategy)) options.order = PlacementOrder{};
    return make_plan(v, layers, identify(v, "hand.img", 1 << 30), options);
}

}  // namespace

TEST_CASE("defrag: best fit outside the MFT zone, the zone only as a last resort", "[plan][defrag]") {
    // 0-9 MFT zone (10 free), 10-19 A (two fragments: 10-14, 17-19 → 8 clusters), 15-16 B,
    // 20-24 C in two fragments (20-21 and 23-24, 22 is D), 30-34 free, 40-99 E.
    VolumeMap v = empty_volume(100);
    v.mft_zone.add(r(0, 10));
    v.free.add(r(0, 10));
    v.free.add(r(25, 30));
    v.free.add(r(30, 35));  // joins 25-29: one extent 25-34 (10 clusters)
    v.free.add(r(35, 40));  // 25-39: 15 clusters
    v.streams.push_back(stream(64, {{0, 10, 5}, {5, 17, 3}}));
    v.streams.push_back(stream(65, {{0, 15, 2}}));
    v.streams.push_back(stream(66, {{0, 20, 2}, {2, 23, 2}}));
    v.streams.push_back(stream(67, {{0, 22, 1}}));
    v.streams.push_back(stream(68, {{0, 40, 60}}));
    const Plan p = plan(v, {}, {});
    // A and C have 2 fragments each; A is larger, so it goes first: 8 clusters into 25-32
    // (outside the zone). Its piece 10-14 joins the zone's 0-9, so the largest free extent
    // stays 15 clusters. Then C: 4 clusters; the best fit outside the zone is 10-14, which
    // would cut the 15-cluster extent 0-14 to 10: defrag never shrinks the largest free
    // extent, so C stays. Free space is now 0-14, 17-19, 33-39: more fragmented than 0-9 and
    // 25-39 were (free-space fragmentation 67 % against 60 %), so B (2 clusters, free space at
    // 17 beside it) fills the crumb 17-19 from its start: 0-16, 19, 33-39 give 57.4 %.
    REQUIRE(p.moves == std::vector<Move>{{64, "$DATA", 0, 10, 25, 5},
                                         {64, "$DATA", 5, 17, 30, 3},
                                         {65, "$DATA", 0, 15, 17, 2}});
    CHECK(p.notes.empty());
    REQUIRE(p.skipped.size() == 1);
    CHECK(p.skipped[0].mft_record == 66);
    CHECK(p.skipped[0].reason ==
          "only the largest free extent has room for its 4 clusters, and defrag does not make "
          "it smaller");
    CHECK(p.summary.fragmented_streams_after == 1);
    CHECK(p.summary.moved_bytes == 10 * 4096);
    CHECK(*p.summary.free_space_fragmentation_percent_after <=
          *p.summary.free_space_fragmentation_percent_before);

    // With nothing outside the zone, the zone is used and the plan says so. Zone 0-39: A goes
    // to the smaller zone extent 0-9 (0-7), and the largest free extent, 25-39, stays. Then C
    // goes to 8-11 (best fit 8-14, A's old piece joined to 8-9).
    VolumeMap tight = v;
    tight.mft_zone.add(r(0, 40));
    const Plan z = plan(tight, {}, {});
    CHECK(z.moves == std::vector<Move>{{64, "$DATA", 0, 10, 0, 5},
                                       {64, "$DATA", 5, 17, 5, 3},
                                       {66, "$DATA", 0, 20, 8, 2},
                                       {66, "$DATA", 2, 23, 10, 2}});
    REQUIRE(z.notes.size() == 1);
    CHECK(z.notes[0].starts_with("2 streams were placed in the MFT zone"));
}

TEST_CASE("defrag: reasons for streams it leaves", "[plan][defrag]") {
    // F: two 64 MiB fragments (16384 clusters each) → left alone. G: 64 MiB + 1 cluster →
    // must move whole, but no free region holds 16385 clusters.
    VolumeMap v = empty_volume(40000);
    v.streams.push_back(stream(70, {{0, 0, 16384}, {16384, 16400, 16384}}));
    v.streams.push_back(stream(71, {{0, 16384, 1}, {1, 32784, 16384}}));
    v.streams.push_back(stream(72, {{0, 16385, 15}}));
    v.free.add(r(33168, 40000));  // 6832 clusters
    const Plan p = plan(v, {}, {});
    CHECK(p.moves.empty());
    REQUIRE(p.skipped.size() == 2);
    // F ranks first: same fragment count, larger.
    CHECK(p.skipped[0].mft_record == 70);
    CHECK(p.skipped[0].reason == "every fragment is at least 64 MiB: left as it is");
    CHECK(p.skipped[1].mft_record == 71);
    CHECK(p.skipped[1].reason == "no free region of 16385 clusters (the largest is 6832 clusters)");
}

TEST_CASE("consolidate fills holes from the start with streams from the end", "[plan][consolidate]") {
    // 0-1 A, 2-3 free, 4-9 B, 10-11 free, 12-13 C, 14-29 D, 30-39 free.
    VolumeMap v = empty_volume(40);
    v.free.add(r(2, 4));
    v.free.add(r(10, 12));
    v.free.add(r(30, 40));
    v.streams.push_back(stream(64, {{0, 0, 2}}));
    v.streams.push_back(stream(65, {{0, 4, 6}}));
    v.streams.push_back(stream(66, {{0, 12, 2}}));
    v.streams.push_back(stream(67, {{0, 14, 16}}));
    PlanOptions options;
    options.strategy = Strategy::Consolidate;
    const Plan p = plan(v, {}, options);
    // Hole 2-3: the last stream after it that fits is C. Its old place joins 10-11 into
    // 10-13, which nothing after it (D, 16 clusters) fits; 30-39 has nothing after it.
    REQUIRE(p.moves == std::vector<Move>{{66, "$DATA", 0, 12, 2, 2}});
    CHECK(p.summary.free_extents_before == 3);
    CHECK(p.summary.free_extents_after == 2);
    CHECK(p.summary.largest_free_extent_clusters_after == 10);
}

TEST_CASE("consolidate packs small streams towards the start", "[plan][consolidate]") {
    // 0-3 free, 4-5 A, 6-7 B, 8-9 C, 10-99 free.
    VolumeMap v = empty_volume(100);
    v.free.add(r(0, 4));
    v.free.add(r(10, 100));
    v.streams.push_back(stream(64, {{0, 4, 2}}));
    v.streams.push_back(stream(65, {{0, 6, 2}}));
    v.streams.push_back(stream(66, {{0, 8, 2}}));
    PlanOptions options;
    options.strategy = Strategy::Consolidate;
    const Plan p = plan(v, {}, options);
    // Hole 0-3: the last stream after it is C → 0-1 (free: 2-3, 8-99). Hole 2-3: the last
    // stream after it that fits is B → 2-3 (free: 6-99). From 4 on, nothing lies after the
    // next hole (6-99). Two moves, one free extent.
    REQUIRE(p.moves == std::vector<Move>{{66, "$DATA", 0, 8, 0, 2}, {65, "$DATA", 0, 6, 2, 2}});
    CHECK(p.summary.free_extents_after == 1);
    CHECK(p.notes.empty());
}

TEST_CASE("consolidate keeps only the prefix that leaves fewest free extents", "[plan][consolidate]") {
    // 0-2 free, 3-7 A, 8 free, 9 B, 10-11 C, 12-19 D, 20-29 free, 30-34 and 36 U (unmovable),
    // 35 E, 37-39 free: 4 free extents.
    VolumeMap v = empty_volume(40);
    v.free.add(r(0, 3));
    v.free.add(r(8, 9));
    v.free.add(r(20, 30));
    v.free.add(r(37, 40));
    v.unmovable.add(r(30, 35));
    v.unmovable.add(r(36, 37));
    Stream u = stream(7, {{0, 30, 5}, {5, 36, 1}});
    u.placement = Placement::Unmovable;
    v.streams.push_back(u);
    v.streams.push_back(stream(64, {{0, 3, 5}}));
    v.streams.push_back(stream(65, {{0, 9, 1}}));
    v.streams.push_back(stream(66, {{0, 10, 2}}));
    v.streams.push_back(stream(67, {{0, 12, 8}}));
    v.streams.push_back(stream(68, {{0, 35, 1}}));
    PlanOptions options;
    options.strategy = Strategy::Consolidate;
    const Plan p = plan(v, {}, options);
    // E → 0 leaves 35 free between U's runs (5 extents); C → 1-2 leaves 10-11 (5); B → 8
    // joins 9-11 (4). Hole 9-11 fits nothing after it (D has 8), 20-29 has no candidate
    // after it. Never fewer than the 4 free extents it started with: all three are dropped.
    CHECK(p.moves.empty());
    REQUIRE(p.notes.size() == 1);
    CHECK(p.notes[0] ==
          "the last 3 streams considered were left out: moving them would not leave fewer free "
          "extents, or would leave free space more fragmented than before the plan");
    CHECK(p.summary.free_extents_after == 4);
}

TEST_CASE("shrink moves streams out of the sparsest granule into room in used ones", "[plan][shrink]") {
    // Granules of 64 KiB = 16 clusters, volume at disk offset 0, 4 granules.
    // g0: A 0-11, free 12-15.  g1: B 16-17, free 18-31.  g2: C 32-45, free 46-47.  g3: free.
    VolumeMap v = empty_volume(64);
    v.free.add(r(12, 16));
    v.free.add(r(18, 32));
    v.free.add(r(46, 64));
    v.streams.push_back(stream(64, {{0, 0, 12}}));
    v.streams.push_back(stream(65, {{0, 16, 2}}));
    v.streams.push_back(stream(66, {{0, 32, 14}}));
    PlanOptions options;
    options.strategy = Strategy::Shrink;
    const auto layers = top_layer(64 << 10, 64 * 4096);
    const Plan p = plan(v, layers, options);
    // g1 (2 used) goes first: B's best fit outside g1 and g3 is 46-47. g0 (12 used) next:
    // A has no room outside g0 (g1 and g3 are empty now and stay so), so it stays.
    REQUIRE(p.moves == std::vector<Move>{{65, "$DATA", 0, 16, 46, 2}});
    CHECK(p.summary.reclaimable_bytes_before == 64 << 10);
    CHECK(p.summary.reclaimable_bytes_after == 128 << 10);
    CHECK(p.summary.thin_growth_bytes == 0);
    CHECK(p.notes[0] == "1 granules of 65536 bytes emptied");
}

TEST_CASE("shrink with split streams empties a granule part by part, over several holes", "[plan][shrink]") {
    // Granules of 16 clusters. g0: A 0-13, free 14-15. g1: B 16-29, free 30-31. g2: C's
    // VCNs 0-3 at 32-35, free 36-47. g3: C's VCNs 4-19 at 48-63. g4: free. C (20 clusters)
    // is larger than a granule and A and B fit in no room outside their own: whole streams
    // empty nothing.
    VolumeMap v = empty_volume(80);
    v.free.add(r(14, 16));
    v.free.add(r(30, 32));
    v.free.add(r(36, 48));
    v.free.add(r(64, 80));
    v.streams.push_back(stream(64, {{0, 0, 14}}));
    v.streams.push_back(stream(65, {{0, 16, 14}}));
    v.streams.push_back(stream(66, {{0, 32, 4}, {4, 48, 16}}));
    PlanOptions options;
    options.strategy = Strategy::Shrink;
    const auto layers = top_layer(64 << 10, 80 * 4096);
    CHECK(plan(v, layers, options).moves.empty());

    // With parts: g2, the sparsest (4 used), sends C's 4 clusters to the two 2-cluster holes
    // of g0 and g1 (its own free clusters and the empty g4 are no room). g0 and g1 then
    // received data; g3's 16 clusters find no room left, which ends the step.
    options.split_streams = true;
    const Plan p = plan(v, layers, options);
    REQUIRE(p.moves == std::vector<Move>{{66, "$DATA", 0, 32, 14, 2}, {66, "$DATA", 2, 34, 30, 2}});
    CHECK(p.summary.reclaimable_bytes_before == 64 << 10);
    CHECK(p.summary.reclaimable_bytes_after == 128 << 10);
    CHECK(p.notes[0] == "1 granules of 65536 bytes emptied");
    CHECK(p.notes[1] == "1 of them by moving the parts of streams lying in them");
}
