// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/image/host_layout.hpp"
#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// How one layer's allocation relates to one NTFS volume (formulas in docs/metrics.md).
/// All figures in bytes of the virtual disk, restricted to the volume's extent.
struct LayerUsage {
    int depth = 0;
    std::uint64_t granule_size = 0;  ///< the layer's growth unit: reclaimable_bytes counts these
    std::uint64_t allocated_bytes = 0;  ///< layer-allocated bytes inside the volume
    std::uint64_t ntfs_used_bytes = 0;  ///< of those, bytes in clusters NTFS has in use
    std::uint64_t ntfs_free_bytes = 0;  ///< of those, bytes in clusters NTFS has free (dead space)
    /// Allocated growth units lying wholly in NTFS-free clusters: what TRIM/UNMAP or a
    /// compaction would hand back right now.
    std::uint64_t reclaimable_bytes = 0;
    HostLayout host;  ///< where the layer's file keeps this volume's data
};

/// One LayerUsage per layer of the image, top layer first. O(allocated runs + free extents).
[[nodiscard]] std::vector<LayerUsage> analyze_layer_usage(const VolumeMap& volume, const std::vector<Layer>& layers);

/// The volume's NTFS-free clusters as byte ranges of the virtual disk.
[[nodiscard]] ByteSet free_bytes_on_disk(const VolumeMap& volume);

/// Clusters `free` of the volume `volume` places (its offset and cluster size) as byte
/// ranges of the virtual disk.
[[nodiscard]] ByteSet free_bytes_on_disk(const VolumeMap& volume, const ClusterSet& free);

}  // namespace guestfrag
