// SPDX-License-Identifier: GPL-2.0-or-later
// Pieces of hand-built volumes for the planner's tests: cluster ranges and $DATA streams of
// 4 KiB clusters.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag::test {

/// A volume of `clusters` clusters of 4 KiB on partition 1, nothing free, no streams.
inline VolumeMap empty_volume(std::int64_t clusters) {
    VolumeMap v;
    v.partition = 1;
    v.cluster_size = 4096;
    v.total_clusters = clusters;
    return v;
}

/// Clusters [lo, hi).
inline ClusterSet::interval_type r(std::int64_t lo, std::int64_t hi) {
    return ClusterSet::interval_type::right_open(lo, hi);
}

/// The unnamed $DATA stream of `record` with these runs, its size their clusters of 4 KiB.
/// An unmovable one gives "$Boot" as its reason.
inline Stream stream(std::uint64_t record, std::vector<Extent> extents, Placement placement = Placement::Movable) {
    Stream s;
    s.mft_record = record;
    s.type = static_cast<std::uint32_t>(AttrType::Data);
    s.extents = std::move(extents);
    s.placement = placement;
    if (placement == Placement::Unmovable) s.reason = "$Boot";
    for (const Extent& e : s.extents) s.size += static_cast<std::uint64_t>(e.clusters) * 4096;
    s.allocated_size = s.size;
    return s;
}

}  // namespace guestfrag::test
