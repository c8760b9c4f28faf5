// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// One power-of-two bucket of free extents, e2freefrag style: extents whose size in
/// bytes lies in [min_bytes, 2 · min_bytes).
struct FreeExtentBucket {
    std::uint64_t min_bytes = 0;
    std::uint64_t extents = 0;
    std::uint64_t bytes = 0;
};

/// Free-space fragmentation of a volume (DESIGN §3; formulas in docs/metrics.md).
struct FreeSpaceFragmentation {
    std::uint64_t free_clusters = 0;
    std::uint64_t extents = 0;
    std::uint64_t largest_extent_clusters = 0;
    double average_extent_clusters = 0;
    double fragmentation_percent = 0;  ///< free-space-weighted ZFS penalty
    std::vector<FreeExtentBucket> histogram;  ///< only non-empty buckets, ascending
};

[[nodiscard]] FreeSpaceFragmentation analyze_free_space(const VolumeMap& volume);

/// ZFS metaslab penalty (0–100) of one free extent of `bytes` (DESIGN §3 table).
[[nodiscard]] int zfs_free_extent_penalty(std::uint64_t bytes);

}  // namespace guestfrag
