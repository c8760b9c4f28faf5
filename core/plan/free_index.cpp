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
    for (const auto& i : initial) insert(first_cluster(i), end_cluster(i));
}

void FreeIndex::insert(std::int64_t lo, std::int64_t hi) {
    extents_.emplace(lo, hi);
    if (sized_) by_size_.emplace(hi - lo, lo);
    penalty_.add(static_cast<std::uint64_t>(hi - lo));
    edited();
}

void FreeIndex::erase(std::int64_t lo, std::int64_t hi) {
    penalty_.remove(static_cast<std::uint64_t>(hi - lo));
    if (sized_) by_size_.erase({hi - lo, lo});
    extents_.erase(lo);
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
    erase(a, b);
    if (a < lo) insert(a, lo);
    if (hi < b) insert(hi, b);
}

void FreeIndex::give(std::int64_t lo, std::int64_t hi) {
    if (lo >= hi) return;
    auto next = extents_.lower_bound(lo);  // first extent starting at or after lo
    if (next != extents_.end() && next->first < hi) broken("freeing clusters that are free", lo, hi);
    // The neighbours it joins, read before either is erased (which invalidates iterators).
    std::optional<Range> left;
    std::optional<Range> right;
    if (next != extents_.begin()) {
        const auto previous = std::prev(next);
        if (previous->second > lo) broken("freeing clusters that are free", lo, hi);
        if (previous->second == lo) left = *previous;
    }
    if (next != extents_.end() && next->first == hi) right = *next;
    if (left) erase(left->first, left->second);
    if (right) erase(right->first, right->second);
    insert(left ? left->first : lo, right ? right->second : hi);
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
