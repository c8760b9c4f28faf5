// SPDX-License-Identifier: GPL-2.0-or-later
// apply_plan (the validator) and plan identities on hand-built volumes.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/plan/apply.hpp"
#include "support/hand_volume.hpp"

using namespace guestfrag;

namespace {

using test::r;
using test::stream;

/// 100 clusters of 4 KiB:
///   0-9 B (record 7, unmovable)   10-14 A VCN 0-4       15-19 C VCN 0-4    20-29 free
///   30-34 A VCN 5-9               35-49 C VCN 5-19      50-51 A VCN 14-15  52-59 D
///   60-99 free.  A has a hole at VCN 10-13.
VolumeMap volume() {
    VolumeMap v;
    v.partition = 1;
    v.partition_offset = 1 << 20;
    v.cluster_size = 4096;
    v.total_clusters = 100;
    v.serial = 0x1234;
    v.free.add(r(20, 30));
    v.free.add(r(60, 100));
    v.unmovable.add(r(0, 10));
    v.streams.push_back(stream(7, {{0, 0, 10}}, Placement::Unmovable));
    v.streams.push_back(stream(64, {{0, 10, 5}, {5, 30, 5}, {10, Extent::kSparse, 4}, {14, 50, 2}}));
    v.streams.push_back(stream(66, {{0, 15, 5}, {5, 35, 15}}));
    v.streams.push_back(stream(67, {{0, 52, 8}}));
    return v;
}

const Stream& find(const VolumeMap& v, std::uint64_t record) {
    for (const Stream& s : v.streams)
        if (s.mft_record == record) return s;
    throw std::runtime_error("no stream");
}

Plan plan_of(std::vector<Move> moves) {
    Plan p;
    p.moves = std::move(moves);
    return p;
}

std::string failure(const VolumeMap& v, const Plan& p) {
    try {
        (void)apply_plan(v, p);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Corrupt);
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST_CASE("apply_plan moves one run and updates free space", "[plan][apply]") {
    const VolumeMap before = volume();
    const VolumeMap after = apply_plan(before, plan_of({{64, "$DATA", 5, 30, 20, 5}}));
    CHECK(find(after, 64).extents ==
          std::vector<Extent>{{0, 10, 5}, {5, 20, 5}, {10, Extent::kSparse, 4}, {14, 50, 2}});
    ClusterSet free;
    free.add(r(25, 35));
    free.add(r(60, 100));
    CHECK(after.free == free);
    // Other streams and the input are untouched.
    CHECK(find(after, 66).extents == find(before, 66).extents);
    CHECK(find(before, 64).extents[1] == Extent{5, 30, 5});
}

TEST_CASE("apply_plan merges a stream moved piece by piece into one run", "[plan][apply]") {
    const VolumeMap after = apply_plan(volume(), plan_of({{64, "$DATA", 0, 10, 60, 5},
                                                          {64, "$DATA", 5, 30, 65, 5},
                                                          {64, "$DATA", 14, 50, 70, 2}}));
    const Stream& a = find(after, 64);
    CHECK(a.extents == std::vector<Extent>{{0, 60, 10}, {10, Extent::kSparse, 4}, {14, 70, 2}});
    CHECK(a.fragments() == 1);  // the hole does not break contiguity (docs/metrics.md)
    ClusterSet free;
    free.add(r(10, 15));
    free.add(r(20, 35));
    free.add(r(50, 52));
    free.add(r(72, 100));
    CHECK(after.free == free);
}

TEST_CASE("apply_plan splits runs when part of a run moves", "[plan][apply]") {
    const VolumeMap after = apply_plan(volume(), plan_of({{66, "$DATA", 8, 38, 80, 4}}));
    CHECK(find(after, 66).extents == std::vector<Extent>{{0, 15, 5}, {5, 35, 3}, {8, 80, 4}, {12, 42, 8}});
    // Moving it back where it came from merges the runs again.
    Plan back = plan_of({{66, "$DATA", 8, 38, 80, 4}, {66, "$DATA", 8, 80, 38, 4}});
    CHECK(find(apply_plan(volume(), back), 66).extents == std::vector<Extent>{{0, 15, 5}, {5, 35, 15}});
    // A move may span LCN-contiguous runs that the map keeps apart.
    VolumeMap split = volume();
    split.streams[2].extents = {{0, 15, 5}, {5, 35, 5}, {10, 40, 10}};
    CHECK(find(apply_plan(split, plan_of({{66, "$DATA", 6, 36, 60, 8}})), 66).extents ==
          std::vector<Extent>{{0, 15, 5}, {5, 35, 1}, {6, 60, 8}, {14, 44, 6}});
}

TEST_CASE("apply_plan runs moves in order: a freed source can be the next destination", "[plan][apply]") {
    // C's first run goes where A's first run was, after A moved away.
    const Plan ordered = plan_of({{64, "$DATA", 0, 10, 60, 5}, {66, "$DATA", 0, 15, 10, 5}});
    CHECK(find(apply_plan(volume(), ordered), 66).extents == std::vector<Extent>{{0, 10, 5}, {5, 35, 15}});
    const Plan reversed = plan_of({ordered.moves[1], ordered.moves[0]});
    CHECK(failure(volume(), reversed) == "move 0: destination [10, 15) is not free at cluster 10");
}

TEST_CASE("apply_plan edits a stream that comes to hold hundreds of runs", "[plan][apply]") {
    // One run of 400 clusters at LCN 0. Its even VCNs move one by one to 1000 + VCN, which
    // leaves 400 runs (past the few a stream is edited in its own vector with); then its odd
    // VCNs follow, and the stream is one run at LCN 1000 again.
    VolumeMap v;
    v.cluster_size = 4096;
    v.total_clusters = 2000;
    v.free.add(r(400, 2000));
    v.streams.push_back(stream(64, {{0, 0, 400}}));
    v.streams.push_back(stream(65, {}));
    Plan p;
    for (int parity : {0, 1})
        for (std::int64_t vcn = parity; vcn < 400; vcn += 2) p.moves.push_back({64, "$DATA", vcn, vcn, 1000 + vcn, 1});

    Plan half = plan_of({p.moves.begin(), p.moves.begin() + 200});
    std::vector<Extent> alternating;
    for (std::int64_t vcn = 0; vcn < 400; ++vcn) alternating.push_back({vcn, vcn % 2 ? vcn : 1000 + vcn, 1});
    const VolumeMap mid = apply_plan(v, half);
    CHECK(find(mid, 64).extents == alternating);
    CHECK(find(mid, 64).fragments() == 400);
    ClusterSet free_mid;
    for (std::int64_t lcn = 0; lcn < 400; lcn += 2) free_mid.add(r(lcn, lcn + 1));
    free_mid.add(r(400, 1000));
    for (std::int64_t lcn = 1001; lcn < 1400; lcn += 2) free_mid.add(r(lcn, lcn + 1));
    free_mid.add(r(1400, 2000));
    CHECK(mid.free == free_mid);

    const VolumeMap after = apply_plan(v, p);
    CHECK(find(after, 64).extents == std::vector<Extent>{{0, 1000, 400}});
    ClusterSet free_after;
    free_after.add(r(0, 1000));
    free_after.add(r(1400, 2000));
    CHECK(after.free == free_after);
    CHECK(find(v, 64).extents == std::vector<Extent>{{0, 0, 400}});  // the input is untouched

    // The same replay, prefix by prefix: fragmented from the first move until the last.
    const std::vector<std::size_t> ends{0, 1, 200, 399, 400};
    const std::vector<PrefixFigures> figures = replay_prefixes(v, p, ends);
    REQUIRE(figures.size() == ends.size());
    CHECK(figures[0].fragmented_streams == 0);
    CHECK(figures[1].fragmented_streams == 1);
    CHECK(figures[2].fragmented_streams == 1);
    CHECK(figures[2].free_extents == 200 + 1 + 199 + 1);  // 0, 2 … 398; 400-999; 1001 … 1397; 1399-1999
    CHECK(figures[3].fragmented_streams == 1);
    CHECK(figures[4].fragmented_streams == 0);
    CHECK(figures[4].free_extents == 2);
    CHECK(figures[4].moved_bytes == 400 * 4096);

    // A move whose source the edited runs no longer hold is refused as before.
    p.moves.push_back({64, "$DATA", 7, 7, 1500, 1});
    CHECK(failure(v, p) == "move 400: record 64 $DATA has VCN 7 at LCN 1007, not at LCN 7");
}

TEST_CASE("apply_plan names the first offending move", "[plan][apply]") {
    const VolumeMap v = volume();
    const Move good{64, "$DATA", 5, 30, 20, 5};
    CHECK(failure(v, plan_of({good, {64, "$DATA", 0, 11, 60, 5}})) ==
          "move 1: record 64 $DATA has VCN 0 at LCN 10, not at LCN 11");
    CHECK(failure(v, plan_of({{64, "$DATA", 3, 13, 60, 4}})) ==
          "move 0: record 64 $DATA has VCN 5 at LCN 30, not at LCN 15");
    CHECK(failure(v, plan_of({{64, "$DATA", 10, 0, 60, 4}})) == "move 0: record 64 $DATA has a hole at VCN 10");
    CHECK(failure(v, plan_of({{64, "$DATA", 14, 50, 60, 3}})) == "move 0: record 64 $DATA maps nothing at VCN 16");
    CHECK(failure(v, plan_of({{65, "$DATA", 0, 10, 60, 1}})) == "move 0: record 65 $DATA does not exist on this volume");
    CHECK(failure(v, plan_of({{64, "$DATA:ads", 0, 10, 60, 1}})) ==
          "move 0: record 64 $DATA:ads does not exist on this volume");
    CHECK(failure(v, plan_of({{7, "$DATA", 0, 0, 60, 10}})) == "move 0: record 7 $DATA is unmovable ($Boot)");
    CHECK(failure(v, plan_of({{67, "$DATA", 0, 52, 25, 8}})) ==
          "move 0: destination [25, 33) is not free at cluster 30");
    CHECK(failure(v, plan_of({{67, "$DATA", 0, 52, 95, 8}})) ==
          "move 0: destination [95, 103) lies outside the volume's 100 clusters");
    CHECK(failure(v, plan_of({{67, "$DATA", 0, 52, 60, 0}})) == "move 0: moves no clusters");
    CHECK(failure(v, plan_of({{67, "$DATA", 0, 52, -1, 8}})) ==
          "move 0: vcn, from_lcn, to_lcn and clusters must lie in [0, 2^62]");
    // Two moves into the same place: the second finds it taken.
    CHECK(failure(v, plan_of({{67, "$DATA", 0, 52, 60, 8}, {66, "$DATA", 0, 15, 62, 5}})) ==
          "move 1: destination [62, 67) is not free at cluster 62");

    VolumeMap excluded = v;
    excluded.streams[3].placement = Placement::Excluded;
    excluded.streams[3].reason = "pagefile.sys is in use by Windows whenever it runs";
    CHECK(failure(excluded, plan_of({{67, "$DATA", 0, 52, 60, 8}})) ==
          "move 0: record 67 $DATA is excluded (pagefile.sys is in use by Windows whenever it runs)");
    VolumeMap pinned_free = v;  // inconsistent input: unmovable clusters marked free
    pinned_free.unmovable.add(r(90, 100));
    CHECK(failure(pinned_free, plan_of({{67, "$DATA", 0, 52, 88, 8}})) ==
          "move 0: destination [88, 96) holds unmovable clusters");
}

TEST_CASE("identity: the digest follows the allocation, the check names what differs", "[plan][identity]") {
    const VolumeMap v = volume();
    const PlanIdentity id = identify(v, "/images/a.img", 1 << 30);
    CHECK(id.partition == 1);
    CHECK(id.volume_serial == 0x1234);
    CHECK(id.cluster_size == 4096);
    CHECK(id.total_clusters == 100);
    CHECK(identify(volume(), "/images/a.img", 1 << 30) == id);

    // Any change to a run or to free space changes the digest.
    const VolumeMap moved = apply_plan(v, plan_of({{67, "$DATA", 0, 52, 60, 8}}));
    CHECK(identify(moved, "/images/a.img", 1 << 30).allocation_digest != id.allocation_digest);
    VolumeMap freer = v;
    freer.free.add(r(59, 60));
    CHECK(identify(freer, "/images/a.img", 1 << 30).allocation_digest != id.allocation_digest);
    VolumeMap renamed = v;
    renamed.streams[3].name = "x";
    CHECK(identify(renamed, "/images/a.img", 1 << 30).allocation_digest != id.allocation_digest);

    // The path is not part of the check; everything else is.
    CHECK_NOTHROW(check_identity(id, identify(v, "a.img", 1 << 30)));
    try {
        check_identity(id, identify(moved, "/images/a.img", 1 << 30));
        FAIL("accepted a changed image");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Corrupt);
        CHECK(std::string(e.what()).starts_with(
            "plan was made for another image or the image changed since (allocation digest "));
    }
    VolumeMap other = v;
    other.serial = 0xabcd;
    try {
        check_identity(id, identify(other, "/images/a.img", 1 << 30));
        FAIL("accepted another volume");
    } catch (const Error& e) {
        CHECK(std::string(e.what()) ==
              "plan was made for another image or the image changed since (volume serial 0000000000001234 in the "
              "plan, 000000000000abcd now)");
    }
}

TEST_CASE("unit_left_in_part: a compressed unit moves whole when its allocated clusters do",
          "[plan][apply]") {
    // Units of 16 clusters: unit 0 compressed into 5 clusters, unit 1 stored whole, unit 2
    // compressed into 3 clusters, each compressed unit ending in its hole.
    Stream s = test::stream(
        70, {{0, 100, 5}, {5, Extent::kSparse, 11}, {16, 120, 16}, {32, 200, 3}, {35, Extent::kSparse, 13}});
    s.flags = Stream::kCompressed;
    s.compression_unit = 4;
    REQUIRE(s.unit_clusters() == 16);
    const auto moved = [](std::initializer_list<std::pair<std::int64_t, std::int64_t>> ranges) {
        VcnSet set;
        for (const auto& [lo, hi] : ranges) set.add(r(lo, hi));
        return set;
    };
    CHECK(unit_left_in_part(s, moved({{0, 5}})) == std::nullopt);
    CHECK(unit_left_in_part(s, moved({{0, 3}})) == 0);
    CHECK(unit_left_in_part(s, moved({{16, 24}})) == 16);
    CHECK(unit_left_in_part(s, moved({{16, 35}})) == std::nullopt);
    CHECK(unit_left_in_part(s, moved({{3, 5}, {16, 32}})) == 0);
    CHECK(unit_left_in_part(s, moved({{32, 34}})) == 32);
    CHECK(unit_left_in_part(s, moved({})) == std::nullopt);

    // A sparse stream's first unit: one cluster of data, then its hole.
    Stream sparse = test::stream(71, {{0, 50, 1}, {1, Extent::kSparse, 15}, {16, 60, 16}});
    sparse.flags = Stream::kSparse;
    sparse.compression_unit = 4;
    CHECK(unit_left_in_part(sparse, moved({{0, 1}})) == std::nullopt);
    CHECK(unit_left_in_part(sparse, moved({{16, 20}})) == 16);

    // Without the flags a stream has no units, whatever its header byte says.
    s.flags = 0;
    CHECK(s.unit_clusters() == 1);
    CHECK(unit_left_in_part(s, moved({{0, 3}})) == std::nullopt);
}

TEST_CASE("apply_plan: the consecutive moves of a sparse stream must move whole units", "[plan][apply]") {
    // Record 64 sparse in units of 4 clusters: [0,4) at LCN 10-13; [4,8) at 14, 30-32; [8,12)
    // at 33-34 then its hole; [12,16) its hole then 50-51.
    VolumeMap v = volume();
    Stream& a = v.streams[1];
    a.flags = Stream::kSparse;
    a.compression_unit = 2;
    CHECK(failure(v, plan_of({{64, "$DATA", 0, 10, 60, 5}})) ==
          "move 0: record 64 $DATA is compressed or sparse and these moves leave part of its compression "
          "unit of 4 "
          "clusters at VCN 4 behind (consecutive moves of such a stream must move whole units)");
    // The same unit carried by two consecutive moves is whole.
    CHECK(failure(v, plan_of({{64, "$DATA", 0, 10, 60, 5}, {64, "$DATA", 5, 30, 65, 5}})) == "accepted");
    // Another stream's move between them splits the run: its first move is named.
    CHECK(failure(v, plan_of({{67, "$DATA", 0, 52, 80, 8},
                              {64, "$DATA", 0, 10, 60, 5},
                              {66, "$DATA", 0, 15, 90, 5},
                              {64, "$DATA", 5, 30, 65, 5}})) ==
          "move 1: record 64 $DATA is compressed or sparse and these moves leave part of its compression "
          "unit of 4 "
          "clusters at VCN 4 behind (consecutive moves of such a stream must move whole units)");
    CHECK(failure(v, plan_of({{64, "$DATA", 14, 50, 60, 2}})) == "accepted");
}
