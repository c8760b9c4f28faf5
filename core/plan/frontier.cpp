// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plan/frontier.hpp"

#include <algorithm>

namespace guestfrag {

namespace {

FrontierPoint after_of(const PlanSummary& s, std::uint64_t budget, std::size_t moves) {
    return {budget,
            moves,
            s.moved_bytes,
            s.free_space_fragmentation_percent_after.value_or(0),
            s.free_extents_after,
            s.largest_free_extent_clusters_after,
            s.fragmented_streams_after};
}

}  // namespace

std::optional<FrontierShares> frontier_shares(const std::vector<FrontierPoint>& points, std::size_t k) {
    if (points.size() < 2 || k >= points.size()) return std::nullopt;
    const double f0 = points.front().free_space_fragmentation_percent;
    const std::uint64_t total = points.back().moved_bytes;
    double gain = 0;
    for (const FrontierPoint& p : points) gain = std::max(gain, f0 - p.free_space_fragmentation_percent);
    if (gain <= 0 || total == 0) return std::nullopt;
    return FrontierShares{(f0 - points[k].free_space_fragmentation_percent) / gain,
                          static_cast<double>(points[k].moved_bytes) / static_cast<double>(total)};
}

std::optional<std::size_t> frontier_knee(const std::vector<FrontierPoint>& points) {
    std::optional<std::size_t> knee;
    double best = 0;
    for (std::size_t k = 1; k < points.size(); ++k) {
        const auto shares = frontier_shares(points, k);
        if (!shares) return std::nullopt;
        if (!knee || shares->gain - shares->data > best) {
            best = shares->gain - shares->data;
            knee = k;
        }
    }
    return knee;
}

Frontier plan_frontier(const VolumeMap& volume, const std::vector<Layer>& layers, const Plan& full,
                       const PlanOptions& options, std::size_t steps) {
    steps = std::max<std::size_t>(steps, 1);
    const PlanSummary& s = full.summary;
    Frontier f;
    f.points.push_back({0, 0, 0, s.free_space_fragmentation_percent_before.value_or(0), s.free_extents_before,
                        s.largest_free_extent_clusters_before, s.fragmented_streams_before});
    const std::uint64_t total = s.moved_bytes;
    for (std::size_t k = 1; k < steps; ++k) {
        const std::uint64_t budget = total / steps * k + total % steps * k / steps;  // ⌊total·k/steps⌋
        PlanOptions bounded = options;
        bounded.max_moved = options.max_moved ? std::min(*options.max_moved, budget) : budget;
        const Plan plan = make_plan(volume, layers, full.identity, bounded);
        f.points.push_back(after_of(plan.summary, budget, plan.moves.size()));
    }
    f.points.push_back(after_of(s, total, full.moves.size()));

    f.knee = frontier_knee(f.points);
    return f;
}

}  // namespace guestfrag
