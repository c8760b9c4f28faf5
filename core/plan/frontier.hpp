// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// The volume after the plan's moves up to one budget of moved bytes.
struct FrontierPoint {
    std::uint64_t budget_bytes = 0;  ///< k/N of the plan's moved bytes
    std::size_t moves = 0;           ///< the first moves of the plan that fit the budget
    std::uint64_t moved_bytes = 0;
    double free_space_fragmentation_percent = 0;
    std::uint64_t free_extents = 0;
    std::uint64_t largest_free_extent_clusters = 0;
    std::uint64_t fragmented_streams = 0;

    bool operator==(const FrontierPoint&) const = default;
};

/// What moving less than the whole plan reaches (docs/planner.md §13): points[0] is the volume
/// before the plan, points[k] the volume after the longest prefix of the plan's moves that
/// moves at most k/steps of its data and ends between streams (points[steps] is the whole
/// plan). `knee` indexes the point where the share of the free-space fragmentation
/// improvement gained exceeds the share of the data moved by the most (frontier_knee); nullopt
/// when there is none.
struct Frontier {
    std::vector<FrontierPoint> points;
    std::optional<std::size_t> knee;
};

/// What point k of `points` (points[0] before any move, the last the whole plan) gains and
/// costs, as shares: gain = (f0 − f_k) / max_j (f0 − f_j), f being free-space fragmentation,
/// and data = moved_k / moved_last. nullopt when no point improves on f0 or nothing moves.
struct FrontierShares {
    double gain = 0;
    double data = 0;
};
[[nodiscard]] std::optional<FrontierShares> frontier_shares(const std::vector<FrontierPoint>& points, std::size_t k);

/// The least lead of gain share over data share that makes a knee.
inline constexpr double kKneeMinLead = 0.005;

/// The knee of `points`: the k ≥ 1 with the largest lead of gain share over data share
/// (frontier_shares), the first such k on ties; nullopt when frontier_shares has none or
/// when no lead reaches kKneeMinLead.
[[nodiscard]] std::optional<std::size_t> frontier_knee(const std::vector<FrontierPoint>& points);

/// The frontier of `full` (a plan for `volume`) at `steps` budgets. Cost: one replay of the
/// plan (replay_prefixes), no planning.
[[nodiscard]] Frontier plan_frontier(const VolumeMap& volume, const Plan& full, std::size_t steps = 10);

}  // namespace guestfrag
