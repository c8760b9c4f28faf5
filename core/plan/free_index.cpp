// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plan/free_index.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/model/free_space.hpp"

namespace guestfrag {

namespace {

[[noreturn]] void broken(const std::string& what, std::int64_t lo, std::int64_t hi) {
    throw Error(ErrorKind::Internal,
                "free-space index: " + what + " [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
}

}  // namespace

FreeIndex::FreeIndex(const ClusterSet& initial, std::uint32_t cluster_size) : penalty_(cluster_size) {
    // icl keeps touching intervals joined, so every interval is one extent.
    for (const auto& i : initial) {
        extents_.emplace_hint(extents_.end(), first_cluster(i), end_cluster(i));
        added(first_cluster(i), end_cluster(i));
    }
}

void FreeIndex::added(std::int64_t lo, std::int64_t hi) {
    if (sized_) by_size_.emplace(hi - lo, lo);
    penalty_.add(static_cast<std::uint64_t>(hi - lo));
    edited();
}

void FreeIndex::removed(std::int64_t lo, std::int64_t hi) {
    penalty_.remove(static_cast<std::uint64_t>(hi - lo));
    if (sized_) by_size_.erase({hi - lo, lo});
    edited();
}

void FreeIndex::edited() {
    if (sized_ && ++edits_ > extents_.size()) {
        by_size_.clear();
        sized_ = false;
    }
}

const absl::btree_set<FreeIndex::Range>& FreeIndex::sized() const {
    edits_ = 0;
    if (!sized_) {
        for (const auto& [a, b] : extents_) by_size_.emplace(b - a, a);
        sized_ = true;
    }
    return by_size_;
}

double FreeIndex::fragmentation_percent() const { return penalty_.percent(); }

void FreeIndex::take(std::int64_t lo, std::int64_t hi) {
    if (lo >= hi) return;
    auto it = extents_.upper_bound(lo);
    if (it == extents_.begin()) broken("taking clusters that are not free", lo, hi);
    --it;
    const auto [a, b] = *it;
    if (b < hi || a > lo) broken("taking clusters that are not free", lo, hi);
    removed(a, b);
    if (a < lo) {
        it->second = lo;  // the head stays, shortened
        added(a, lo);
        ++it;
    } else {
        it = extents_.erase(it);
    }
    if (hi < b) {  // the tail, before the extent after
        extents_.emplace_hint(it, hi, b);
        added(hi, b);
    }
}

void FreeIndex::give(std::int64_t lo, std::int64_t hi) {
    if (lo >= hi) return;
    auto next = extents_.lower_bound(lo);  // first extent starting at or after lo
    if ((next != extents_.end() && next->first < hi) || (next != extents_.begin() && std::prev(next)->second > lo))
        broken("freeing clusters that are free", lo, hi);
    const bool joins_left = next != extents_.begin() && std::prev(next)->second == lo;
    std::int64_t end = hi;
    if (next != extents_.end() && next->first == hi) {  // the extent after joins it
        end = next->second;
        removed(hi, end);
        next = extents_.erase(next);
    }
    if (joins_left) {  // the extent before grows in place over [lo, end)
        const auto left = std::prev(next);
        removed(left->first, lo);
        left->second = end;
        added(left->first, end);
        return;
    }
    extents_.emplace_hint(next, lo, end);
    added(lo, end);
}

std::optional<std::int64_t> FreeIndex::best_fit(std::int64_t clusters) const {
    const auto& by_size = sized();
    const auto it = by_size.lower_bound({clusters, std::numeric_limits<std::int64_t>::min()});
    if (it == by_size.end()) return std::nullopt;
    return it->second;
}

std::optional<FreeIndex::Range> FreeIndex::extent_from(std::int64_t lcn) const {
    auto it = extents_.upper_bound(lcn);
    if (it != extents_.begin() && std::prev(it)->second > lcn) --it;
    if (it == extents_.end()) return std::nullopt;
    return *it;
}

std::vector<FreeIndex::Range> FreeIndex::overlapping(std::int64_t lo, std::int64_t hi) const {
    std::vector<Range> out;
    auto it = extents_.upper_bound(lo);
    if (it != extents_.begin() && std::prev(it)->second > lo) --it;
    for (; it != extents_.end() && it->first < hi; ++it)
        out.emplace_back(std::max(lo, it->first), std::min(hi, it->second));
    return out;
}

std::int64_t FreeIndex::largest() const { return sized().empty() ? 0 : by_size_.rbegin()->first; }

ClusterSet FreeIndex::clusters() const {
    ClusterSet out;
    for (const auto& [a, b] : extents_) out.add(out.end(), cluster_range(a, b));
    return out;
}

}  // namespace guestfrag
