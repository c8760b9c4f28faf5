// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/estimate/cluster_allocator.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// Where NTFS puts new files one after another (docs/estimate.md §2, write:N "Allocation"):
/// a ClusterAllocator over the volume's free space outside the MFT zone, starting at the
/// zone's end, the zone's free clusters joining only when a file fits nowhere else. Works
/// on its own copy of the free space.
class NewFilePlacer {
public:
    explicit NewFilePlacer(const VolumeMap& volume);

    /// The runs (VCN from 0) of a new file of `clusters` clusters; empty when it does not
    /// fit in what is left (the zone included): nothing is taken then.
    [[nodiscard]] std::vector<Extent> place(std::int64_t clusters) { return place(clusters, allocator_.hint()); }
    /// The same, looking from `hint` (ClusterAllocator::allocate with a hint): how a file
    /// that grows write by write asks for room next to its last run.
    [[nodiscard]] std::vector<Extent> place(std::int64_t clusters, std::int64_t hint);
    /// The end of the last allocation (the zone's end before the first): where a new file starts looking.
    [[nodiscard]] std::int64_t hint() const noexcept { return allocator_.hint(); }

private:
    const VolumeMap* volume_;
    ClusterAllocator allocator_;
    bool zone_released_ = false;
};

}  // namespace guestfrag
