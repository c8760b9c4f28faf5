// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/cluster_allocator.hpp"

#include <algorithm>

namespace guestfrag {

ClusterAllocator::ClusterAllocator(const ClusterSet& free, std::int64_t hint) : hint_(hint) {
    for (const auto& interval : free) {
        const std::int64_t lower = boost::icl::first(interval);
        const std::int64_t length = boost::icl::length(interval);
        if (length <= 0) continue;
        runs_.push_back(Run{lower, length});
        free_ += length;
    }
    while (leaves_ < runs_.size()) leaves_ *= 2;
    max_.assign(2 * leaves_, 0);
    for (std::size_t i = 0; i < runs_.size(); ++i) max_[leaves_ + i] = runs_[i].length;
    for (std::size_t node = leaves_ - 1; node >= 1; --node)
        max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
}

std::size_t ClusterAllocator::find(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from,
                                   std::int64_t need) const {
    if (hi <= from || max_[node] < need) return kNone;
    if (hi - lo == 1) return lo;
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::size_t left = find(2 * node, lo, mid, from, need);
    return left != kNone ? left : find(2 * node + 1, mid, hi, from, need);
}

std::size_t ClusterAllocator::first_fit(std::size_t from, std::int64_t need) const {
    if (from >= runs_.size()) return kNone;
    return find(1, 0, leaves_, from, need);
}

std::int64_t ClusterAllocator::take(std::size_t i, std::int64_t n) {
    Run& run = runs_[i];
    const std::int64_t lcn = run.start;
    run.start += n;
    run.length -= n;
    free_ -= n;
    hint_ = run.start;
    for (std::size_t node = (leaves_ + i); node >= 1; node /= 2)
        max_[node] = node >= leaves_ ? run.length : std::max(max_[2 * node], max_[2 * node + 1]);
    return lcn;
}

std::vector<Extent> ClusterAllocator::allocate(std::int64_t clusters, std::int64_t hint) {
    std::vector<Extent> out;
    if (clusters <= 0 || clusters > free_) return out;

    // Runs are used from their front, so starts stay ascending and a hint, the end of an
    // earlier allocation, is the start of the run it came from (or lies in used space).
    const auto at_hint = static_cast<std::size_t>(
        std::lower_bound(runs_.begin(), runs_.end(), hint,
                         [](const Run& r, std::int64_t lcn) { return r.start < lcn; }) -
        runs_.begin());

    std::size_t fit = first_fit(at_hint, clusters);
    if (fit == kNone) fit = first_fit(0, clusters);
    if (fit != kNone) {
        out.push_back(Extent{0, take(fit, clusters), clusters});
        return out;
    }

    // No extent holds it all: fill it from consecutive extents, in address order from the hint.
    std::int64_t need = clusters;
    std::size_t next = at_hint;
    while (need > 0) {
        std::size_t i = first_fit(next, 1);
        if (i == kNone) i = first_fit(0, 1);  // free_ ≥ need guarantees a run exists
        const std::int64_t n = std::min(need, runs_[i].length);
        const std::int64_t vcn = clusters - need;
        out.push_back(Extent{vcn, take(i, n), n});
        need -= n;
        next = i;
    }
    return out;
}

ClusterSet ClusterAllocator::remaining() const {
    ClusterSet out;
    for (const Run& r : runs_)
        if (r.length > 0) out.add(ClusterSet::interval_type::right_open(r.start, r.start + r.length));
    return out;
}

}  // namespace guestfrag
