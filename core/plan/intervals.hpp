// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include <absl/container/btree_map.h>
#include <boost/icl/interval_set.hpp>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// First and one-past-last cluster of an interval, whatever its bounds.
[[nodiscard]] inline std::int64_t first_cluster(const ClusterSet::interval_type& i) { return boost::icl::first(i); }
[[nodiscard]] inline std::int64_t end_cluster(const ClusterSet::interval_type& i) { return boost::icl::last_next(i); }
[[nodiscard]] inline ClusterSet::interval_type cluster_range(std::int64_t lo, std::int64_t hi) {
    return ClusterSet::interval_type::right_open(lo, hi);
}

/// The part of `set` inside `range`, in O(log |set| + result) — unlike icl's `set & range`,
/// which copies the whole set first.
template <class Set>
[[nodiscard]] Set clip(const Set& set, const typename Set::interval_type& range) {
    Set out;
    boost::icl::add_intersection(out, set, range);
    return out;
}

/// Ranges [lo, hi) set aside to be given to an index in ascending order, a batch at a time.
/// Given one at a time in an order that jumps across the disk (a plan's), each was a
/// descent of a B-tree far larger than the caches at ten million streams; sorted, neighbours
/// share the descent's path. For an index that is asked far less often than it is given to,
/// and for a set built once from a plan's ranges.
template <class T>
class PendingRanges {
public:
    /// 1 MiB of ranges: the batch add(lo, hi, give) gives when it is full.
    static constexpr std::size_t kBatch = std::size_t{1} << 16;

    /// Keeps [lo, hi); one going on from the range kept last lengthens it (a stream's
    /// pieces usually go one after the other), so there is less to sort.
    void add(T lo, T hi) {
        if (!pending_.empty() && pending_.back().second == lo)
            pending_.back().second = hi;
        else
            pending_.emplace_back(lo, hi);
    }
    /// Keeps [lo, hi), then gives the batch to `give` (as give_to) once it is full.
    template <class Give>
    void add(T lo, T hi, Give&& give) {
        add(lo, hi);
        if (pending_.size() >= kBatch) give_to(give);
    }
    [[nodiscard]] bool empty() const { return pending_.empty(); }
    /// Calls give(lo, hi) for the union of the ranges kept, ascending, ranges that touch or
    /// overlap joined, and forgets them.
    template <class Give>
    void give_to(Give&& give) {
        std::ranges::sort(pending_);
        for (std::size_t i = 0; i < pending_.size();) {
            auto [lo, hi] = pending_[i];
            for (++i; i < pending_.size() && pending_[i].first <= hi; ++i)
                hi = std::max(hi, pending_[i].second);
            give(lo, hi);
        }
        pending_.clear();
    }

private:
    std::vector<std::pair<T, T>> pending_;
};

/// A union of half-open ranges [lo, hi) edited one range at a time, in a B-tree (start →
/// end) where ranges that touch are one. For the sets a plan's replay edits a move at a
/// time, in the plan's order, which jumps across the disk: an icl set's interval
/// comparisons, or a std::map's node a key (a cache miss a level once millions of ranges
/// outgrow the caches), cost more than the rest of the replay together.
template <class T>
class RangeUnion {
public:
    RangeUnion() = default;
    /// The ranges of an icl interval set (already joined where they touch). O(intervals).
    template <class Set>
    explicit RangeUnion(const Set& set) {
        for (const auto& i : set)
            ranges_.emplace_hint(ranges_.end(), boost::icl::first(i), boost::icl::last_next(i));
    }

    /// Adds [lo, hi), joining whatever it touches or overlaps. A range that starts inside or
    /// right after one already there (a replay's freed sources, a plan's destinations laid end
    /// to end) extends that one in place: one descent of the tree, where an erase and an
    /// insertion cost three at ten million ranges.
    void add(T lo, T hi) {
        if (lo >= hi) return;
        auto next = ranges_.upper_bound(lo);
        const bool extends = next != ranges_.begin() && std::prev(next)->second >= lo;
        if (extends && std::prev(next)->second >= hi) return;
        // The ranges after lo that [lo, hi) reaches are swallowed; erasing returns the next
        // one, so the range extended is found again from it.
        while (next != ranges_.end() && next->first <= hi) {
            hi = std::max(hi, next->second);
            next = ranges_.erase(next);
        }
        if (extends)
            std::prev(next)->second = hi;
        else
            ranges_.emplace_hint(next, lo, hi);
    }

    /// Removes [lo, hi) when all of it is inside the union and returns nullopt; otherwise
    /// leaves the union as it is and returns the first value of [lo, hi) outside it. One
    /// descent of the tree, where a check and then a removal took two.
    std::optional<T> take(T lo, T hi) {
        auto it = ranges_.upper_bound(lo);
        if (it == ranges_.begin()) return lo;
        --it;
        const T end = it->second;
        if (end <= lo) return lo;
        if (end < hi) return end;
        if (it->first < lo) {
            it->second = lo;  // the head stays: shortened in place
            ++it;
        } else {
            it = ranges_.erase(it);
        }
        if (hi < end) ranges_.emplace_hint(it, hi, end);
        return std::nullopt;
    }

    /// Calls visit(a, b) for each part [a, b) of the union inside [lo, hi), ascending.
    template <class Visit>
    void for_each_in(T lo, T hi, Visit&& visit) const {
        auto it = ranges_.upper_bound(lo);
        if (it != ranges_.begin() && std::prev(it)->second > lo) --it;
        for (; it != ranges_.end() && it->first < hi; ++it)
            visit(std::max(lo, it->first), std::min(hi, it->second));
    }

    [[nodiscard]] const absl::btree_map<T, T>& ranges() const { return ranges_; }

    /// The union as an icl interval set. O(ranges).
    template <class Set>
    [[nodiscard]] Set to_set() const {
        Set out;
        for (const auto& [a, b] : ranges_) out.add(out.end(), Set::interval_type::right_open(a, b));
        return out;
    }

private:
    absl::btree_map<T, T> ranges_;
};

}  // namespace guestfrag
