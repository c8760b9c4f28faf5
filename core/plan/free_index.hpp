// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/model/free_space.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/intervals.hpp"

namespace guestfrag {

/// A set of free cluster ranges that answers "smallest extent of at least n clusters" in
/// O(log extents): the planner's view of where a stream can go. Extents are kept in a
/// std::map (start → end) and, in step with it, ordered by (length, start). A plain map,
/// not a ClusterSet: icl's interval comparisons made the planner several times slower.
/// Plain value; copyable.
class FreeIndex {
public:
    using Range = std::pair<std::int64_t, std::int64_t>;  ///< [first, second)

    FreeIndex() = default;
    /// O(extents · log extents). With a cluster size, the index also keeps the volume's
    /// free-space fragmentation up to date (fragmentation_percent).
    explicit FreeIndex(const ClusterSet& initial, std::uint32_t cluster_size = 0);

    /// Removes [lo, hi), which must lie inside one free extent; throws Error(Internal)
    /// otherwise (a planner bug, never bad input). O(log extents).
    void take(std::int64_t lo, std::int64_t hi);
    /// Adds [lo, hi), which must not overlap free clusters (Error(Internal) otherwise),
    /// merging with free neighbours. O(log extents).
    void give(std::int64_t lo, std::int64_t hi);

    /// Start of the smallest extent of at least `clusters` clusters (lowest start among
    /// equals), nullopt when none is large enough.
    [[nodiscard]] std::optional<std::int64_t> best_fit(std::int64_t clusters) const;
    /// Walks the extents of at least `clusters` clusters, smallest first (lowest start among
    /// equals), and returns the first non-nullopt answer of `accept(extent)`.
    /// O(log extents + extents visited).
    template <class Accept>
    [[nodiscard]] auto first_by_size(std::int64_t clusters, Accept accept) const -> decltype(accept(Range{})) {
        for (auto it = by_size_.lower_bound({clusters, std::numeric_limits<std::int64_t>::min()}); it != by_size_.end();
             ++it) {
            if (auto answer = accept(Range{it->second, it->second + it->first})) return answer;
        }
        return {};
    }
    /// The first extent that contains `lcn` or starts after it.
    [[nodiscard]] std::optional<Range> extent_from(std::int64_t lcn) const;
    /// The free parts of [lo, hi), ascending. O(log extents + result).
    [[nodiscard]] std::vector<Range> overlapping(std::int64_t lo, std::int64_t hi) const;

    [[nodiscard]] std::int64_t largest() const;
    /// analyze_free_space's fragmentation_percent of these extents (docs/metrics.md §4), in
    /// O(1); 0 when the index was made without a cluster size.
    [[nodiscard]] double fragmentation_percent() const;
    [[nodiscard]] std::size_t extents() const { return extents_.size(); }
    /// The free clusters as a ClusterSet. O(extents).
    [[nodiscard]] ClusterSet clusters() const;

private:
    void insert(std::int64_t lo, std::int64_t hi);
    void erase(std::map<std::int64_t, std::int64_t>::iterator it);

    std::map<std::int64_t, std::int64_t> extents_;  ///< start → end
    std::set<Range> by_size_;                       ///< (length, start)
    FreeSpacePenalty penalty_{0};
};

}  // namespace guestfrag
