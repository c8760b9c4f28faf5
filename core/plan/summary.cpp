// SPDX-License-Identifier: GPL-2.0-or-later
// PlanSummary: the before/after figures a plan claims (docs/planner.md §2).
#include <algorithm>

#include "core/model/free_space.hpp"
#include "core/plan/growth.hpp"
#include "core/plan/intervals.hpp"
#include "core/plan/planner.hpp"

namespace guestfrag {

namespace {

struct Counts {
    std::uint64_t fragments = 0;
    std::uint64_t fragmented_streams = 0;
    std::uint64_t free_extents = 0;
    std::uint64_t largest_free = 0;
};

Counts count(const VolumeMap& volume) {
    Counts c;
    for (const Stream& s : volume.streams) {
        const std::uint64_t f = s.fragments();
        c.fragments += f;
        if (f > 1) ++c.fragmented_streams;
    }
    for (const auto& i : volume.free) {
        const std::int64_t length = end_cluster(i) - first_cluster(i);
        if (length <= 0) continue;
        ++c.free_extents;
        c.largest_free = std::max(c.largest_free, static_cast<std::uint64_t>(length));
    }
    return c;
}

}  // namespace

PlanSummary summarize_plan(const VolumeMap& before, const VolumeMap& after, const std::vector<Layer>& layers,
                           std::uint64_t granule, const Plan& plan) {
    PlanSummary s;
    s.moves = plan.moves.size();
    for (const Move& m : plan.moves) s.moved_clusters += static_cast<std::uint64_t>(m.clusters);
    s.moved_bytes = s.moved_clusters * before.cluster_size;

    const Counts b = count(before);
    const Counts a = count(after);
    s.fragments_before = b.fragments;
    s.fragments_after = a.fragments;
    s.fragmented_streams_before = b.fragmented_streams;
    s.fragmented_streams_after = a.fragmented_streams;
    s.free_extents_before = b.free_extents;
    s.free_extents_after = a.free_extents;
    s.largest_free_extent_clusters_before = b.largest_free;
    s.largest_free_extent_clusters_after = a.largest_free;
    s.free_space_fragmentation_percent_before = analyze_free_space(before).fragmentation_percent;
    s.free_space_fragmentation_percent_after = analyze_free_space(after).fragmentation_percent;

    GrowthModel growth(before, layers, granule);
    // Growth depends on the set of destinations alone, so they are written in disk order:
    // each write then lands at the model's right edge, where in the plan's order it is a
    // descent at a random place (cache misses at every level on ten million moves).
    PendingRanges<std::int64_t> destinations;
    for (const Move& m : plan.moves)
        if (m.clusters > 0) destinations.add(m.to_lcn, m.to_lcn + m.clusters);
    destinations.give_to([&](std::int64_t lo, std::int64_t hi) { growth.write(lo, hi - lo); });
    s.granule_size = growth.granule();
    s.thin_growth_bytes = growth.total().thin_growth_bytes;
    s.clone_delta_growth_bytes = growth.total().clone_delta_growth_bytes;
    if (!layers.empty()) {  // without a top layer nothing is allocated, so nothing reclaimable
        s.reclaimable_bytes_before = reclaimable_bytes(before, before.free, growth.top_allocation(), s.granule_size);
        s.reclaimable_bytes_after =
            reclaimable_bytes(after, after.free, growth.top_allocation_after(), s.granule_size);
    }
    return s;
}

}  // namespace guestfrag
