// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// One power-of-two bucket of free extents, e2freefrag style: extents whose size in
/// bytes lies in [min_bytes, 2 · min_bytes).
struct FreeExtentBucket {
    std::uint64_t min_bytes = 0;  ///< a power of two
    std::uint64_t extents = 0;    ///< free extents in the bucket
    std::uint64_t bytes = 0;      ///< their total size
};

/// Free-space fragmentation of a volume (docs/design.md §3; formulas and worked example in
/// docs/metrics.md). Free extents are the intervals of VolumeMap::free, taken as given
/// (maximal, inside the volume). Byte figures saturate at UINT64_MAX instead of wrapping.
struct FreeSpaceFragmentation {
    std::uint64_t free_clusters = 0;
    std::uint64_t extents = 0;
    std::uint64_t largest_extent_clusters = 0;
    double average_extent_clusters = 0;
    double fragmentation_percent = 0;         ///< free-space-weighted ZFS penalty (0 when nothing free)
    std::vector<FreeExtentBucket> histogram;  ///< only non-empty buckets, ascending
};

/// Pure; never fails; O(free extents) time, O(1) extra memory besides the result.
[[nodiscard]] FreeSpaceFragmentation analyze_free_space(const VolumeMap& volume);

/// The free-space fragmentation figure (FreeSpaceFragmentation::fragmentation_percent) kept
/// as free extents come and go: Σ clusters · penalty over Σ clusters. The sums are integers
/// (penalties are), so removing an extent undoes adding it exactly; the cluster size only
/// picks each extent's penalty (it cancels out of the ratio). Sums saturate at UINT64_MAX.
class FreeSpacePenalty {
public:
    explicit FreeSpacePenalty(std::uint32_t cluster_size) noexcept : cluster_size_(cluster_size) {}
    void add(std::uint64_t clusters) noexcept;
    /// `clusters` must be an extent added before.
    void remove(std::uint64_t clusters) noexcept;
    /// 0 when nothing is free or the cluster size is 0.
    [[nodiscard]] double percent() const noexcept;

private:
    [[nodiscard]] std::uint64_t weighted(std::uint64_t clusters) const noexcept;

    std::uint32_t cluster_size_;
    std::uint64_t clusters_ = 0;
    std::uint64_t weighted_ = 0;
};

/// ZFS metaslab penalty (0–100) of one free extent of `bytes` (docs/design.md §3 table): the penalty
/// of the first row whose limit is ≥ bytes (≤ 1K: 100, ≤ 2K: 98, ..., ≤ 8M: 5); extents
/// above 8M but below 16M keep 5, and 16M or more get 0. See docs/metrics.md.
[[nodiscard]] int zfs_free_extent_penalty(std::uint64_t bytes);

}  // namespace guestfrag
