// SPDX-License-Identifier: GPL-2.0-or-later
// Strategy "consolidate": free-space consolidation (docs/planner.md §6).
#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/plan/intervals.hpp"
#include "core/plan/strategy.hpp"

namespace guestfrag::planner {

namespace {

/// Minimum segment tree over candidate sizes, answering "the highest index ≥ lo whose size
/// is ≤ limit" in O(log n). Removed candidates hold +∞.
class RightmostFit {
public:
    explicit RightmostFit(const std::vector<std::int64_t>& sizes) : n_(sizes.size()) {
        while (leaves_ < n_) leaves_ *= 2;
        tree_.assign(2 * leaves_, kNone);
        for (std::size_t i = 0; i < n_; ++i) tree_[leaves_ + i] = sizes[i];
        for (std::size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = std::min(tree_[2 * i], tree_[2 * i + 1]);
    }

    void remove(std::size_t i) {
        std::size_t node = leaves_ + i;
        tree_[node] = kNone;
        for (node /= 2; node >= 1; node /= 2) tree_[node] = std::min(tree_[2 * node], tree_[2 * node + 1]);
    }

    [[nodiscard]] std::optional<std::size_t> rightmost(std::size_t lo, std::int64_t limit) const {
        if (lo >= n_) return std::nullopt;
        return search(1, 0, leaves_, lo, limit);
    }

private:
    static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

    /// Node `node` covers leaves [begin, end).
    [[nodiscard]] std::optional<std::size_t> search(std::size_t node, std::size_t begin, std::size_t end,
                                                    std::size_t lo, std::int64_t limit) const {
        if (end <= lo || tree_[node] > limit) return std::nullopt;
        if (end - begin == 1) return begin;
        const std::size_t mid = (begin + end) / 2;
        if (auto right = search(2 * node + 1, mid, end, lo, limit)) return right;
        return search(2 * node, begin, mid, lo, limit);
    }

    std::size_t n_;
    std::size_t leaves_ = 1;
    std::vector<std::int64_t> tree_;
};

struct Candidate {
    std::size_t index = 0;
    std::int64_t first_lcn = 0;  ///< lowest cluster the stream occupies
    std::int64_t clusters = 0;
};

/// Where the plan may be cut: after a stream's last move.
struct Checkpoint {
    std::size_t moves = 0;
    std::size_t skipped = 0;
    std::size_t free_extents = 0;
};

}  // namespace

void plan_consolidate(Builder& builder, const Progress& progress) {
    const VolumeMap& volume = builder.volume();
    const auto& streams = volume.streams;

    std::vector<Candidate> candidates;
    for (std::size_t i = 0; i < streams.size(); ++i) {
        const Stream& s = streams[i];
        if (s.placement != Placement::Movable) continue;
        const std::vector<Piece> pieces = pieces_of(s);
        if (pieces.empty()) continue;
        if (const auto glob = builder.excluded_by(s)) {
            builder.skip(s, "matches --exclude " + *glob);
            continue;
        }
        std::int64_t first = pieces.front().lcn;
        for (const Piece& p : pieces) first = std::min(first, p.lcn);
        candidates.push_back({i, first, s.allocated_clusters()});
    }
    std::ranges::sort(candidates, [](const Candidate& a, const Candidate& b) {
        return a.first_lcn != b.first_lcn ? a.first_lcn < b.first_lcn : a.index < b.index;
    });
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> firsts;
    sizes.reserve(candidates.size());
    firsts.reserve(candidates.size());
    for (const Candidate& c : candidates) {
        sizes.push_back(c.clusters);
        firsts.push_back(c.first_lcn);
    }
    RightmostFit fit(sizes);
    std::vector<char> taken(candidates.size(), 0);
    // In placement order: which candidate each stream is, and which stream ends where, so
    // that a hole can take the stream read right after the one that ends at its start.
    std::vector<std::size_t> candidate_of;
    std::unordered_map<std::int64_t, std::size_t> ends_at;  // end of the last piece → stream
    if (builder.ordered()) {
        candidate_of.assign(streams.size(), candidates.size());
        for (std::size_t k = 0; k < candidates.size(); ++k) candidate_of[candidates[k].index] = k;
        for (std::size_t i = 0; i < streams.size(); ++i)
            if (const std::vector<Piece> pieces = pieces_of(streams[i]); !pieces.empty())
                ends_at[pieces.back().lcn + pieces.back().clusters] = i;
    }
    // The candidate read right after whatever ends at `a`, when it lies wholly after the hole
    // [a, b) and fits it.
    const auto successor = [&](std::int64_t a, std::int64_t b) -> std::optional<std::size_t> {
        const auto before = ends_at.find(a);
        if (before == ends_at.end()) return std::nullopt;
        const std::size_t r = builder.rank(before->second) + 1;
        if (r >= builder.sequence().size()) return std::nullopt;
        const std::size_t k = candidate_of[builder.sequence()[r]];
        if (k == candidates.size() || taken[k] || candidates[k].first_lcn < b ||
            candidates[k].clusters > b - a)
            return std::nullopt;
        return k;
    };

    // Holes are filled only outside the MFT zone and the unmovable clusters.
    ClusterSet allowed(cluster_range(0, volume.total_clusters));
    allowed -= volume.mft_zone;
    allowed -= volume.unmovable;
    Pool pool(volume.free, std::move(allowed), ClusterSet{});
    // The whole volume's free space: its extent count, largest extent and fragmentation.
    FreeIndex free_now(volume.free, volume.cluster_size);
    const double fragmentation_before = free_now.fragmentation_percent();
    const std::int64_t largest_before = free_now.largest();

    Checkpoint best{0, builder.plan().skipped.size(), free_now.extents()};
    const std::size_t skipped_at_start = best.skipped;
    std::int64_t cursor = 0;
    std::uint64_t steps = 0;
    for (;;) {
        if (++steps % kProgressEvery == 0) progress.update(static_cast<std::uint64_t>(cursor), volume.total_clusters);
        const auto hole = pool.all().extent_from(cursor);
        if (!hole) break;
        const auto [a, b] = *hole;
        // Only streams lying wholly after the hole may move into it: every move goes towards
        // the start, so the loop ends.
        const auto after = static_cast<std::size_t>(std::ranges::lower_bound(firsts, b) - firsts.begin());
        if (after == candidates.size()) break;
        auto chosen = builder.ordered() ? successor(a, b) : std::nullopt;
        if (!chosen) chosen = fit.rightmost(after, b - a);
        if (!chosen) {
            cursor = b;
            continue;
        }
        fit.remove(*chosen);
        taken[*chosen] = 1;
        const Candidate& c = candidates[*chosen];
        const Stream& s = streams[c.index];
        if (builder.over_moved_budget(c.clusters)) {
            builder.skip(s, builder.moved_budget_reason());
            break;
        }
        if (auto reason = builder.over_growth_budget(a, c.clusters)) {
            builder.skip(s, std::move(*reason));
            continue;
        }
        const std::vector<Piece> pieces = pieces_of(s);
        builder.move_whole(s, pieces, a);
        pool.take(a, a + c.clusters);
        free_now.take(a, a + c.clusters);
        for (const Piece& p : pieces) {
            pool.give(p.lcn, p.lcn + p.clusters);
            free_now.give(p.lcn, p.lcn + p.clusters);
        }
        cursor = a + c.clusters;
        if (builder.ordered()) {
            ends_at.erase(pieces.back().lcn + pieces.back().clusters);
            ends_at[cursor] = c.index;
        }
        // Like defrag (docs/planner.md §5), never a cut that leaves free space more
        // fragmented or its largest extent smaller than before the plan.
        if (free_now.extents() < best.free_extents &&
            free_now.fragmentation_percent() <= fragmentation_before && free_now.largest() >= largest_before)
            best = {builder.plan().moves.size(), builder.plan().skipped.size(), free_now.extents()};
    }
    progress.update(volume.total_clusters, volume.total_clusters);

    // Keep the prefix that left the fewest free extents: never worse than doing nothing.
    Plan& plan = builder.plan();
    if (plan.moves.size() != best.moves) {
        const std::size_t dropped_streams = streams_in(plan.moves, best.moves).size();
        plan.moves.resize(best.moves);
        plan.skipped.resize(std::max(best.skipped, skipped_at_start));
        plan.notes.push_back("the last " + std::to_string(dropped_streams) +
                             " streams considered were left out: moving them would not leave fewer free "
                             "extents, or would leave "
                             "free space more fragmented than before the plan");
    }
}

}  // namespace guestfrag::planner
