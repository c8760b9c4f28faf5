// SPDX-License-Identifier: GPL-2.0-or-later
#include "analyzers/layer_usage.hpp"

#include <algorithm>

namespace guestfrag {

ByteSet free_bytes_on_disk(const VolumeMap& volume) { return free_bytes_on_disk(volume, volume.free); }

ByteSet free_bytes_on_disk(const VolumeMap& volume, const ClusterSet& clusters) {
    ByteSet bytes;
    const std::uint64_t cs = volume.cluster_size;
    for (const auto& free : clusters)
        bytes.add(bytes.end(), ByteSet::interval_type::right_open(
                                   volume.partition_offset + static_cast<std::uint64_t>(free.lower()) * cs,
                                   volume.partition_offset + static_cast<std::uint64_t>(free.upper()) * cs));
    return bytes;
}

std::vector<LayerUsage> analyze_layer_usage(const VolumeMap& volume, const std::vector<Layer>& layers) {
    const std::uint64_t cs = volume.cluster_size;
    const auto extent = ByteSet::interval_type::right_open(
        volume.partition_offset, volume.partition_offset + static_cast<std::uint64_t>(volume.total_clusters) * cs);
    const ByteSet free = free_bytes_on_disk(volume);
    std::vector<LayerUsage> result;
    for (const Layer& layer : layers) {
        LayerUsage usage;
        usage.depth = layer.depth;
        usage.granule_size = layer.growth_granule();
        const ByteSet allocated = layer.allocated & extent;
        usage.allocated_bytes = boost::icl::length(allocated);
        usage.ntfs_free_bytes = boost::icl::length(allocated & free);
        usage.ntfs_used_bytes = usage.allocated_bytes - usage.ntfs_free_bytes;
        // Whole granules inside free extents: shrink each free range to granule boundaries.
        const std::uint64_t g = std::max<std::uint64_t>(usage.granule_size, 1);
        ByteSet whole_free_granules;
        for (const auto& f : free) {
            const std::uint64_t lo = (f.lower() + g - 1) / g * g;
            const std::uint64_t hi = f.upper() / g * g;
            if (lo < hi) whole_free_granules.add(whole_free_granules.end(), ByteSet::interval_type::right_open(lo, hi));
        }
        usage.reclaimable_bytes = boost::icl::length(allocated & whole_free_granules);
        usage.host = analyze_host_layout(layer, extent.lower(), extent.upper());
        result.push_back(usage);
    }
    return result;
}

}  // namespace guestfrag
