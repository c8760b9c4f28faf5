// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// The NTFS-style cluster allocator the write workload models (docs/estimate.md §2, write:N).
/// Allocation continues from a position hint, the end of the previous allocation:
///  1. first fit: the first free extent starting at or after the hint that holds the whole
///     request, else the first such extent from the start of the volume (wrap-around);
///     the request is taken from that extent's start, in one run;
///  2. only when no free extent holds it, the request is split: free extents are taken
///     whole in address order from the hint (wrapping), the last one in part, as
///     ntfs-3g's ntfs_cluster_alloc does, so free-space fragmentation becomes fragmented
///     files.
/// The install:N workload passes its own hint per call (the cluster after the growing
/// file's last run), so a file keeps growing in place while its neighbour is free.
/// Owns a copy of the free extents it was given; nothing is ever freed.
/// Memory O(extents); each allocation O(log extents) per run it returns.
class ClusterAllocator {
public:
    /// `free`: the clusters it may hand out. `hint`: where the first allocation starts looking.
    ClusterAllocator(const ClusterSet& free, std::int64_t hint);

    /// Allocates `clusters` clusters and returns their runs in order, VCNs from 0. Returns
    /// an empty vector, allocating nothing, when `clusters` ≤ 0 or fewer clusters are free.
    [[nodiscard]] std::vector<Extent> allocate(std::int64_t clusters) { return allocate(clusters, hint_); }
    /// The same, looking from `hint` instead of the end of the previous allocation (which
    /// still moves to the end of the last run handed out). When the free extent that
    /// starts at `hint` holds the request, the request continues there, contiguous.
    [[nodiscard]] std::vector<Extent> allocate(std::int64_t clusters, std::int64_t hint);

    [[nodiscard]] std::int64_t free_clusters() const noexcept { return free_; }
    /// Where the next allocation starts looking: the end of the last run handed out.
    [[nodiscard]] std::int64_t hint() const noexcept { return hint_; }
    /// The clusters still free.
    [[nodiscard]] ClusterSet remaining() const;

private:
    struct Run {
        std::int64_t start = 0;   ///< grows as the run is used from its front
        std::int64_t length = 0;  ///< 0 once used up (the run stays in place)
    };
    static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

    /// The first run at index ≥ from with length ≥ need, or kNone.
    [[nodiscard]] std::size_t first_fit(std::size_t from, std::int64_t need) const;
    [[nodiscard]] std::size_t find(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from,
                                   std::int64_t need) const;
    /// Hands out `n` clusters from the front of run `i`; returns their first LCN.
    std::int64_t take(std::size_t i, std::int64_t n);

    std::vector<Run> runs_;          // sorted by start; starts stay strictly ascending
    std::size_t leaves_ = 1;         // a power of two ≥ runs_.size()
    std::vector<std::int64_t> max_;  // segment tree of run lengths: node 1 is the root
    std::int64_t free_ = 0;
    std::int64_t hint_ = 0;
};

}  // namespace guestfrag
