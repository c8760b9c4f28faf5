// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plan/frontier.hpp"

#include <algorithm>

#include "core/plan/apply.hpp"

namespace guestfrag {

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
        if (shares->gain - shares->data > best) {
            best = shares->gain - shares->data;
            knee = k;
        }
    }
    // A lead under half a point buys no more than its share of the data ("100 % of the data
    // gives 100 % of the gain", give or take rounding): that is no knee to recommend.
    if (best < kKneeMinLead) return std::nullopt;
    return knee;
}

Frontier plan_frontier(const VolumeMap& volume, const Plan& full, std::size_t steps) {
    steps = std::max<std::size_t>(steps, 1);
    const auto& moves = full.moves;
    // Bytes moved by the first n moves, and where a prefix may end: not inside the run of
    // consecutive moves of one stream, so each prefix moves whole what it moves.
    std::vector<std::uint64_t> moved(moves.size() + 1, 0);
    for (std::size_t n = 0; n < moves.size(); ++n)
        moved[n + 1] = moved[n] + static_cast<std::uint64_t>(moves[n].clusters) * volume.cluster_size;
    const auto boundary = [&](std::size_t n) {
        return n == 0 || n == moves.size() || moves[n - 1].mft_record != moves[n].mft_record ||
               moves[n - 1].stream != moves[n].stream;
    };
    const std::uint64_t total = moved.back();
    std::vector<std::uint64_t> budgets{0};
    std::vector<std::size_t> ends{0};
    for (std::size_t k = 1; k < steps; ++k) {
        const std::uint64_t budget = total / steps * k + total % steps * k / steps;  // ⌊total·k/steps⌋
        std::size_t n = static_cast<std::size_t>(std::upper_bound(moved.begin(), moved.end(), budget) - moved.begin()) - 1;
        while (!boundary(n)) --n;
        budgets.push_back(budget);
        ends.push_back(std::max(n, ends.back()));
    }
    budgets.push_back(total);
    ends.push_back(moves.size());

    Frontier f;
    const std::vector<PrefixFigures> figures = replay_prefixes(volume, full, ends);
    for (std::size_t k = 0; k < figures.size(); ++k) {
        const PrefixFigures& p = figures[k];
        f.points.push_back({budgets[k], p.moves, p.moved_bytes, p.free_space_fragmentation_percent, p.free_extents,
                            p.largest_free_extent_clusters, p.fragmented_streams});
    }
    f.knee = frontier_knee(f.points);
    return f;
}

}  // namespace guestfrag
