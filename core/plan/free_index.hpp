// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <absl/container/btree_map.h>
#include <absl/container/btree_set.h>

#include "core/model/free_space.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/intervals.hpp"

namespace guestfrag {

/// A set of free cluster ranges that answers "smallest extent of at least n clusters" in
/// O(log extents): the planner's view of where a stream can go. Extents are kept in a
/// B-tree (start → end) and, in step with it, ordered by (length, start). Not a ClusterSet:
/// icl's interval comparisons made the planner several times slower; not std::map, whose
/// node a key costs a cache miss a level once millions of extents outgrow the caches.
/// Plain value; copyable. Its const queries may rebuild a cache (by_size_): one thread at a
/// time, as for any edit.
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
    [[nodiscard]] auto first_by_size(std::int64_t clusters, Accept accept) const
        -> decltype(accept(Range{})) {
        const auto& by_size = sized();
        for (auto it = by_size.lower_bound({clusters, std::numeric_limits<std::int64_t>::min()});
             it != by_size.end(); ++it) {
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
    /// What the other indices keep of an extent [lo, hi) that extents_ gained or lost. The
    /// edits of extents_ itself stay with take and give, which shorten or lengthen an extent
    /// in place where they can: a B-tree lookup costs a cache miss a level at ten million
    /// extents, and an erase invalidates every iterator into it.
    void added(std::int64_t lo, std::int64_t hi);
    void removed(std::int64_t lo, std::int64_t hi);
    /// Counts an edit; lets by_size_ go after as many edits as there are extents with no
    /// query between.
    void edited();

    /// by_size_, brought up to date first if it was let go.
    const absl::btree_set<Range>& sized() const;

    absl::btree_map<std::int64_t, std::int64_t> extents_;  ///< start → end
    /// (length, start) of every extent, while `sized_`. A cache the const queries rebuild:
    /// an index edited many times between two queries (optimize's detour room, given every
    /// place a stream leaves and asked only when the moves run into a cycle: twice in a
    /// million moves) lets it go after as many edits as it has extents, so that it costs
    /// one B-tree, not two, an edit. The rebuild, O(extents), is paid for by those edits:
    /// never more than a constant an edit, whatever the mix.
    mutable absl::btree_set<Range> by_size_;
    mutable bool sized_ = true;
    mutable std::size_t edits_ = 0;  ///< since the last query
    FreeSpacePenalty penalty_{0};
};

}  // namespace guestfrag
