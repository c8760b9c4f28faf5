// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

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

}  // namespace guestfrag
