// SPDX-License-Identifier: GPL-2.0-or-later
// Every strategy on a generated disk: its plan passes the validator and what it claims is
// what an independent analysis of the after-state finds.
#include <catch2/catch.hpp>

#include <optional>
#include <set>

#include "analyzers/analysis.hpp"
#include "core/image/open_image.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/free_index.hpp"
#include "core/plan/intervals.hpp"
#include "core/plan/planner.hpp"
#include "core/plan/strategy.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;

namespace {

MkImageOptions disk_options() {
    MkImageOptions o;
    o.disk_size = 64ull << 20;
    o.files = 800;
    o.seed = 11;
    // Room enough that defrag can place its streams without leaving free space worse.
    o.delete_fraction = 0.4;
    return o;
}

struct Disk {
    std::string path;
    std::uint64_t size = 0;
    std::vector<Layer> layers;
    VolumeMap map;
};

const Disk& disk() {
    static const Disk d = [] {
        Disk out;
        out.path = test::generated_image("plan-strategies-roomy", disk_options()).string();
        const auto image = open_image(out.path);
        ImageAnalysis a = analyze_image(*image);
        out.size = a.virtual_size;
        out.layers = a.layers;
        out.map = std::move(a.volumes.at(0).map);
        return out;
    }();
    return d;
}

Plan plan_for(const Disk& d, PlanOptions options) {
    return make_plan(d.map, d.layers, identify(d.map, d.path, d.size), options);
}

ByteSet::interval_type disk_bytes(const VolumeMap& v, std::int64_t lcn, std::int64_t clusters) {
    const std::uint64_t lo = v.partition_offset + static_cast<std::uint64_t>(lcn) * v.cluster_size;
    return ByteSet::interval_type::right_open(lo, lo + static_cast<std::uint64_t>(clusters) * v.cluster_size);
}

/// Thin and clone growth counted granule by granule, straight from the definition.
std::pair<std::uint64_t, std::uint64_t> growth_by_hand(const VolumeMap& v, const std::vector<Layer>& layers,
                                                        const Plan& plan, std::uint64_t g, ByteSet& written) {
    std::set<std::uint64_t> granules;
    for (const Move& m : plan.moves) {
        const auto bytes = disk_bytes(v, m.to_lcn, m.clusters);
        for (std::uint64_t k = boost::icl::first(bytes) / g; k * g < boost::icl::last_next(bytes); ++k)
            granules.insert(k);
    }
    std::uint64_t thin = 0;
    std::uint64_t clone = 0;
    for (const std::uint64_t k : granules) {
        const auto granule = ByteSet::interval_type::right_open(k * g, (k + 1) * g);
        written.add(granule);
        const bool top = boost::icl::intersects(layers[0].allocated, granule);
        bool parent = false;
        for (std::size_t i = 1; i < layers.size(); ++i) parent = parent || boost::icl::intersects(layers[i].allocated, granule);
        if (!top && !parent) thin += g;
        if (!top && parent) clone += g;
    }
    return {thin, clone};
}

/// Every cluster belongs to at most one stream or to free space, and the VCN layout of
/// every stream is unchanged: apply_plan moved data, it did not lose or duplicate any.
void require_consistent(const VolumeMap& before, const VolumeMap& after) {
    REQUIRE(after.streams.size() == before.streams.size());
    ClusterSet seen = after.free;
    std::int64_t counted = after.free_clusters();
    for (std::size_t i = 0; i < after.streams.size(); ++i) {
        const Stream& a = after.streams[i];
        const Stream& b = before.streams[i];
        REQUIRE(a.allocated_clusters() == b.allocated_clusters());
        std::int64_t vcn = 0;
        for (const Extent& e : a.extents) {
            REQUIRE(e.vcn == vcn);
            vcn += e.clusters;
            if (e.lcn < 0) continue;
            const auto r = ClusterSet::interval_type::right_open(e.lcn, e.lcn + e.clusters);
            REQUIRE_FALSE(boost::icl::intersects(seen, r));
            seen.add(r);
            counted += e.clusters;
        }
        std::int64_t before_vcn = 0;
        for (const Extent& e : b.extents) before_vcn += e.clusters;
        REQUIRE(vcn == before_vcn);
    }
    REQUIRE(counted == static_cast<std::int64_t>(boost::icl::length(seen)));
}

/// The plan passes apply_plan, and its summary equals the analyzers' view of the result.
VolumeMap require_claims_hold(const Disk& d, const Plan& plan) {
    const VolumeMap after = apply_plan(d.map, plan);
    require_consistent(d.map, after);
    const PlanSummary& s = plan.summary;

    const FileFragmentation fb = analyze_file_fragmentation(d.map);
    const FileFragmentation fa = analyze_file_fragmentation(after);
    CHECK(s.fragments_before == fb.fragments);
    CHECK(s.fragments_after == fa.fragments);
    CHECK(s.fragmented_streams_before == fb.fragmented_streams);
    CHECK(s.fragmented_streams_after == fa.fragmented_streams);
    const FreeSpaceFragmentation sb = analyze_free_space(d.map);
    const FreeSpaceFragmentation sa = analyze_free_space(after);
    CHECK(s.free_extents_before == sb.extents);
    CHECK(s.free_extents_after == sa.extents);
    CHECK(s.largest_free_extent_clusters_before == sb.largest_extent_clusters);
    CHECK(s.largest_free_extent_clusters_after == sa.largest_extent_clusters);
    CHECK(after.free_clusters() == d.map.free_clusters());

    std::uint64_t moved = 0;
    for (const Move& m : plan.moves) moved += static_cast<std::uint64_t>(m.clusters) * d.map.cluster_size;
    CHECK(s.moves == plan.moves.size());
    CHECK(s.moved_bytes == moved);

    ByteSet written;
    const auto [thin, clone] = growth_by_hand(d.map, d.layers, plan, s.granule_size, written);
    CHECK(s.thin_growth_bytes == thin);
    CHECK(s.clone_delta_growth_bytes == clone);

    // Reclaimable as analyze_layer_usage computes it, on a top layer growing by the plan's granule
    // that also holds every granule the plan wrote.
    std::vector<Layer> layers = d.layers;
    layers[0].growth_unit = s.granule_size;
    CHECK(s.reclaimable_bytes_before == analyze_layer_usage(d.map, layers)[0].reclaimable_bytes);
    layers[0].allocated += written;
    CHECK(s.reclaimable_bytes_after == analyze_layer_usage(after, layers)[0].reclaimable_bytes);
    return after;
}

const Stream* find(const VolumeMap& v, std::uint64_t record, const std::string& label) {
    for (const Stream& s : v.streams)
        if (s.mft_record == record && s.label() == label) return &s;
    return nullptr;
}

}  // namespace

TEST_CASE("defrag removes at least 90% of fragmented streams on a disk with 20% free", "[plan][defrag]") {
    const Disk& d = disk();
    REQUIRE(d.map.free_clusters() * 5 >= d.map.total_clusters);
    const Plan plan = plan_for(d, {});
    CHECK(plan.strategy == "defrag");
    CHECK(plan.identity == identify(d.map, d.path, d.size));
    const VolumeMap after = require_claims_hold(d, plan);

    const FileFragmentation before_f = analyze_file_fragmentation(d.map);
    const FileFragmentation after_f = analyze_file_fragmentation(after);
    REQUIRE(before_f.fragmented_streams >= 50);
    CHECK((before_f.fragmented_streams - after_f.fragmented_streams) * 10 >= before_f.fragmented_streams * 9);
    // And free space is no worse than before (docs/planner.md §5).
    const FreeSpaceFragmentation before_free = analyze_free_space(d.map);
    const FreeSpaceFragmentation after_free = analyze_free_space(after);
    CHECK(after_free.fragmentation_percent <= before_free.fragmentation_percent);
    CHECK(after_free.largest_extent_clusters >= before_free.largest_extent_clusters);
    // Whole streams move: every stream the plan touched ends in one fragment.
    for (const Move& m : plan.moves) {
        const Stream* s = find(after, m.mft_record, m.stream);
        REQUIRE(s != nullptr);
        CHECK(s->fragments() == 1);
    }
    // Streams that stay fragmented are the ones the plan says it skipped.
    std::set<std::pair<std::uint64_t, std::string>> skipped;
    for (const auto& k : plan.skipped) skipped.emplace(k.mft_record, k.stream);
    for (const Stream& s : after.streams)
        if (s.fragments() > 1) CHECK(skipped.count({s.mft_record, s.label()}) == 1);
}

TEST_CASE("thin-safe writes only inside allocated top-layer granules: zero growth", "[plan][thin-safe]") {
    const Disk& d = disk();
    PlanOptions options;
    options.strategy = Strategy::ThinSafe;
    const Plan plan = plan_for(d, options);
    require_claims_hold(d, plan);
    REQUIRE_FALSE(plan.moves.empty());
    CHECK(plan.summary.fragmented_streams_after < plan.summary.fragmented_streams_before);
    // Independently of any granule arithmetic: every destination byte is already allocated.
    for (const Move& m : plan.moves)
        CHECK(boost::icl::contains(d.layers[0].allocated, disk_bytes(d.map, m.to_lcn, m.clusters)));
    CHECK(plan.summary.thin_growth_bytes == 0);
    CHECK(plan.summary.clone_delta_growth_bytes == 0);

    // The same at a 1 MiB granule (VMFS thin blocks).
    options.granule = 1 << 20;
    const Plan vmfs = plan_for(d, options);
    require_claims_hold(d, vmfs);
    CHECK(vmfs.summary.granule_size == 1 << 20);
    CHECK(vmfs.summary.thin_growth_bytes == 0);
}

TEST_CASE("consolidate leaves fewer free extents and never fragments a stream", "[plan][consolidate]") {
    const Disk& d = disk();
    PlanOptions options;
    options.strategy = Strategy::Consolidate;
    const Plan plan = plan_for(d, options);
    const VolumeMap after = require_claims_hold(d, plan);
    // Fewer free extents, and (docs/planner.md §14) free space no more fragmented and its
    // largest extent no smaller than before: the rule that cuts the plan where it was best.
    CHECK(plan.summary.free_extents_after < plan.summary.free_extents_before);
    CHECK(*plan.summary.free_space_fragmentation_percent_after <=
          *plan.summary.free_space_fragmentation_percent_before);
    CHECK(plan.summary.largest_free_extent_clusters_after >=
          plan.summary.largest_free_extent_clusters_before);
    for (std::size_t i = 0; i < after.streams.size(); ++i)
        CHECK(after.streams[i].fragments() <= std::max<std::uint64_t>(d.map.streams[i].fragments(), 1));
    // Nothing lands in the MFT zone.
    for (const Move& m : plan.moves)
        CHECK_FALSE(boost::icl::intersects(d.map.mft_zone, ClusterSet::interval_type::right_open(m.to_lcn, m.to_lcn + m.clusters)));
}

TEST_CASE("shrink empties sparsely used granules", "[plan][shrink]") {
    const Disk& d = disk();
    PlanOptions options;
    options.strategy = Strategy::Shrink;
    // At the raw file's own 4 KiB granule nothing can improve: every free cluster is a
    // whole granule already.
    const Plan native = plan_for(d, options);
    CHECK(native.moves.empty());
    REQUIRE_FALSE(native.notes.empty());

    options.granule = 256 << 10;
    const Plan plan = plan_for(d, options);
    require_claims_hold(d, plan);
    REQUIRE_FALSE(plan.moves.empty());
    CHECK(plan.summary.reclaimable_bytes_after > plan.summary.reclaimable_bytes_before);
    CHECK(plan.summary.thin_growth_bytes == 0);
}

TEST_CASE("budgets and exclusions bound the plan", "[plan][budget]") {
    const Disk& d = disk();
    SECTION("--max-moved") {
        PlanOptions options;
        options.max_moved = 1 << 20;
        const Plan plan = plan_for(d, options);
        require_claims_hold(d, plan);
        CHECK(plan.summary.moved_bytes <= 1 << 20);
        REQUIRE_FALSE(plan.skipped.empty());
        CHECK(plan.skipped.back().reason.starts_with("--max-moved budget of 1048576 bytes reached"));
    }
    SECTION("--max-growth 0") {
        PlanOptions options;
        options.max_growth = 0;
        const Plan unbounded = plan_for(d, {});
        REQUIRE(unbounded.summary.thin_growth_bytes > 0);  // else this section proves nothing
        const Plan plan = plan_for(d, options);
        require_claims_hold(d, plan);
        CHECK(plan.summary.thin_growth_bytes + plan.summary.clone_delta_growth_bytes == 0);
        CHECK(std::ranges::any_of(plan.skipped, [](const auto& k) { return k.reason.find("--max-growth") != std::string::npos; }));
    }
    SECTION("--exclude") {
        PlanOptions options;
        options.exclude = {"*"};
        const Plan none = plan_for(d, options);
        CHECK(none.moves.empty());
        CHECK(std::ranges::all_of(none.skipped, [](const auto& k) {
            return k.reason == "matches --exclude *" || k.reason.starts_with("unmovable");
        }));
        // Exclude the first stream defrag would move, by its path in upper case with '/'.
        const Plan all = plan_for(d, {});
        REQUIRE_FALSE(all.moves.empty());
        std::string path = d.map.path_of(all.moves.front().mft_record);
        for (char& c : path) c = c == '\\' ? '/' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        options.exclude = {path};
        const Plan without = plan_for(d, options);
        for (const Move& m : without.moves) CHECK(m.mft_record != all.moves.front().mft_record);
        CHECK(without.moves.size() < all.moves.size());
    }
}

TEST_CASE("path globs: case-insensitive, either separator, * crosses directories", "[plan][glob]") {
    CHECK(path_matches("*.vhdx", "\\VMs\\disk.VHDX"));
    CHECK(path_matches("/windows/*", "\\Windows\\System32\\a.dll"));
    CHECK(path_matches("\\dir?\\f[0-9]*", "\\dir1\\f7.txt"));
    CHECK_FALSE(path_matches("\\dir?\\f[!0-9]*", "\\dir1\\f7.txt"));
    CHECK_FALSE(path_matches("*.txt", "\\a.txt.bak"));
    CHECK(path_matches("*", "\\"));
    CHECK_FALSE(path_matches("\\a", "\\ab"));
    CHECK(path_matches("[ab", "[ab"));  // an unclosed bracket is literal
}

TEST_CASE("defrag and thin-safe never leave free space worse, on many volumes", "[plan][defrag][no-worse]") {
    const auto seed = GENERATE(range(1u, 13u));
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 300;
    o.seed = seed;
    o.interleave = 4 + seed % 12;
    o.delete_fraction = 0.1 + 0.05 * (seed % 6);
    const std::string path = test::generated_image("no-worse-" + std::to_string(seed), o).string();
    const auto image = open_image(path);
    const ImageAnalysis a = analyze_image(*image);
    const VolumeMap& map = a.volumes.at(0).map;
    const FreeSpaceFragmentation before = analyze_free_space(map);
    for (const Strategy strategy : {Strategy::Defrag, Strategy::ThinSafe}) {
        PlanOptions options;
        options.strategy = strategy;
        const Plan plan = make_plan(map, a.layers, identify(map, path, a.virtual_size), options);
        const FreeSpaceFragmentation after = analyze_free_space(apply_plan(map, plan));
        INFO("seed " << seed << ", " << strategy_name(strategy) << ": " << plan.moves.size() << " moves, "
                     << before.fragmentation_percent << " % -> " << after.fragmentation_percent << " %");
        CHECK(after.fragmentation_percent <= before.fragmentation_percent);
        CHECK(after.largest_extent_clusters >= before.largest_extent_clusters);
    }
}

TEST_CASE("the free-space index keeps analyze_free_space's fragmentation through takes and gives", "[plan][free-index]") {
    VolumeMap v;
    v.cluster_size = 4096;
    v.total_clusters = 1 << 16;
    v.free.add(ClusterSet::interval_type::right_open(0, 1 << 16));
    FreeIndex index(v.free, v.cluster_size);
    std::uint32_t x = 12345;
    const auto next = [&x] { return x = x * 1103515245u + 12345u; };
    for (int step = 0; step < 2000; ++step) {
        const auto lo = static_cast<std::int64_t>(next() % (1 << 16));
        const auto len = static_cast<std::int64_t>(1 + next() % 300);
        const auto hi = std::min<std::int64_t>(lo + len, 1 << 16);
        const auto range = ClusterSet::interval_type::right_open(lo, hi);
        if (boost::icl::contains(v.free, range) && index.extent_from(lo) && index.extent_from(lo)->second >= hi) {
            index.take(lo, hi);
            v.free.subtract(range);
        } else if (!boost::icl::intersects(v.free, range)) {
            index.give(lo, hi);
            v.free.add(range);
        }
        if (step % 100 == 0) {
            const FreeSpaceFragmentation want = analyze_free_space(v);
            CHECK(index.fragmentation_percent() == Approx(want.fragmentation_percent).epsilon(1e-12));
            CHECK(index.largest() == static_cast<std::int64_t>(want.largest_extent_clusters));
        }
    }
}

TEST_CASE("the free-space index answers best fit as a search of every extent, however rarely it is asked",
          "[plan][free-index]") {
    // Queries every step, then after long runs of edits with none: the (length, start) index
    // is let go after as many edits as there are extents and rebuilt by the next query, and
    // every answer must be the one a search of the free clusters gives.
    ClusterSet free(ClusterSet::interval_type::right_open(0, 1 << 14));
    FreeIndex index(free);
    std::uint32_t x = 4242;
    const auto next = [&x] { return x = x * 1103515245u + 12345u; };
    const auto reference = [&](std::int64_t n) -> std::optional<std::int64_t> {
        std::optional<std::pair<std::int64_t, std::int64_t>> best;  // (length, start)
        for (const auto& f : free) {
            const std::pair<std::int64_t, std::int64_t> here{boost::icl::length(f), boost::icl::first(f)};
            if (here.first >= n && (!best || here < *best)) best = here;
        }
        return best ? std::optional(best->second) : std::nullopt;
    };
    int asked = 0;
    for (int step = 0; step < 20000; ++step) {
        const auto lo = static_cast<std::int64_t>(next() % (1 << 14));
        const auto hi = std::min<std::int64_t>(lo + 1 + static_cast<std::int64_t>(next() % 40), 1 << 14);
        const auto range = ClusterSet::interval_type::right_open(lo, hi);
        if (boost::icl::contains(free, range) && index.extent_from(lo)->second >= hi) {
            index.take(lo, hi);
            free.subtract(range);
        } else if (!boost::icl::intersects(free, range)) {
            index.give(lo, hi);
            free.add(range);
        }
        // Steps 0-1999 and every 500th step ask; the runs between let the index go.
        if (step < 2000 || step % 500 == 0) {
            ++asked;
            const auto n = static_cast<std::int64_t>(1 + next() % 64);
            INFO("step " << step << ", " << free.iterative_size() << " extents, best fit of " << n);
            REQUIRE(index.best_fit(n) == reference(n));
            REQUIRE(index.extents() == free.iterative_size());
            std::int64_t largest = 0;
            for (const auto& f : free) largest = std::max<std::int64_t>(largest, boost::icl::length(f));
            REQUIRE(index.largest() == largest);
        }
    }
    CHECK(asked == 2000 + 36);
}

TEST_CASE("a range union edited a range at a time is the interval set of the same edits",
          "[plan][free-index]") {
    RangeUnion<std::int64_t> ranges;
    ClusterSet want;
    std::uint32_t x = 99;
    const auto next = [&x] { return x = x * 1103515245u + 12345u; };
    int taken = 0;
    int refused = 0;
    for (int step = 0; step < 5000; ++step) {
        const auto lo = static_cast<std::int64_t>(next() % 3000);
        const auto hi = lo + 1 + static_cast<std::int64_t>(next() % 50);
        const auto range = cluster_range(lo, hi);
        ClusterSet outside(range);
        outside -= want;
        const auto missing = outside.empty() ? std::nullopt : std::optional(first_cluster(*outside.begin()));
        if (next() % 2) {
            // Taken only when all of it is inside; otherwise nothing changes.
            REQUIRE(ranges.take(lo, hi) == missing);
            ++(missing ? refused : taken);
            if (!missing) want.subtract(range);
        } else {
            ranges.add(lo, hi);  // overlapping, touching or apart
            want.add(range);
        }
        ClusterSet seen;
        ranges.for_each_in(lo - 20, hi + 20, [&](std::int64_t a, std::int64_t b) {
            seen.add(seen.end(), cluster_range(a, b));
        });
        REQUIRE(seen == clip(want, cluster_range(lo - 20, hi + 20)));
    }
    CHECK(ranges.to_set<ClusterSet>() == want);
    CHECK(ranges.ranges().size() == want.iterative_size());  // touching ranges are one
    CHECK(taken > 500);
    CHECK(refused > 500);
}

TEST_CASE("pending ranges are given as their union, ascending, each once", "[plan][free-index]") {
    PendingRanges<std::int64_t> pending;
    ClusterSet want;
    std::uint32_t x = 7;
    const auto next = [&x] { return x = x * 1103515245u + 12345u; };
    std::int64_t last = 0;
    for (int i = 0; i < 3000; ++i) {
        // Often on from the range before, as a stream's pieces are; else anywhere, overlapping too.
        const auto lo = next() % 3 == 0 ? last : static_cast<std::int64_t>(next() % 20000);
        const auto hi = lo + 1 + static_cast<std::int64_t>(next() % 40);
        pending.add(lo, hi);
        want.add(cluster_range(lo, hi));
        last = hi;
    }
    CHECK_FALSE(pending.empty());
    std::vector<std::pair<std::int64_t, std::int64_t>> given;
    pending.give_to([&](std::int64_t lo, std::int64_t hi) { given.emplace_back(lo, hi); });
    CHECK(pending.empty());
    std::vector<std::pair<std::int64_t, std::int64_t>> expected;
    for (const auto& i : want) expected.emplace_back(first_cluster(i), end_cluster(i));
    CHECK(given == expected);  // ascending, touching and overlapping ranges joined
}

TEST_CASE("the pool's best fit matches a search of every free extent, zones to avoid included", "[plan][free-index]") {
    // Reference: the smallest room (lowest start among equals) of at least n clusters
    // outside `avoid`, counting each extent's parts outside it; else the smallest extent
    // at all, flagged as touching `avoid`.
    std::uint32_t x = 777;
    const auto next = [&x] { return x = x * 1103515245u + 12345u; };
    for (int round = 0; round < 40; ++round) {
        ClusterSet free;
        ClusterSet avoid;
        for (int i = 0; i < 60; ++i) {
            const auto lo = static_cast<std::int64_t>(next() % 4000);
            free.add(ClusterSet::interval_type::right_open(lo, lo + 1 + static_cast<std::int64_t>(next() % 40)));
        }
        for (int i = 0; i < 3; ++i) {
            const auto lo = static_cast<std::int64_t>(next() % 4000);
            avoid.add(ClusterSet::interval_type::right_open(lo, lo + 1 + static_cast<std::int64_t>(next() % 400)));
        }
        const ClusterSet allowed(ClusterSet::interval_type::right_open(0, 1 << 20));
        const planner::Pool pool(free, allowed, avoid);
        for (std::int64_t n = 1; n <= 45; ++n) {
            std::optional<std::pair<std::int64_t, std::int64_t>> outside;  // (length, start)
            std::optional<std::pair<std::int64_t, std::int64_t>> any;
            for (const auto& e : free) {
                const std::int64_t lo = boost::icl::first(e);
                const std::int64_t len = boost::icl::length(e);
                if (len >= n && (!any || std::pair{len, lo} < *any)) any = std::pair{len, lo};
                ClusterSet parts(e);
                parts -= avoid;
                for (const auto& p : parts)
                    if (const std::pair part{static_cast<std::int64_t>(boost::icl::length(p)), boost::icl::first(p)};
                        part.first >= n && (!outside || part < *outside))
                        outside = part;
            }
            INFO("round " << round << ", " << n << " clusters");
            const auto fit = pool.best_fit(n);
            REQUIRE(fit.has_value() == (outside || any));
            if (!fit) continue;
            CHECK(fit->avoided == !outside);
            CHECK(fit->lcn == (outside ? outside->second : any->second));
        }
    }
}
