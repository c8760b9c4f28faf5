// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/copy_cost.hpp"
#include "analyzers/fragmentation.hpp"
#include "analyzers/layer_usage.hpp"
#include "core/image/disk_image.hpp"
#include "core/model/free_space.hpp"
#include "core/model/volume_map.hpp"
#include "core/partition/partition.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// One analysed NTFS volume: its cluster map and the metrics computed from it.
struct VolumeAnalysis {
    VolumeMap map;
    FileFragmentation files;
    FreeSpaceFragmentation free_space;
    std::vector<LayerUsage> layers;  ///< per image layer, top first
};

/// The result of `guestfrag analyze`: plain data, rendered by the CLI and the GUI.
struct ImageAnalysis {
    std::string path;
    ImageFormat format = ImageFormat::Raw;  ///< of the top layer
    std::uint64_t virtual_size = 0;
    std::vector<Layer> layers;
    std::vector<HostLayout> host;  ///< per layer, over the whole disk
    ImageCopyCost copy;            ///< what the file's layout costs a full copy (docs/copy.md)
    PartitionTable table;
    std::vector<VolumeAnalysis> volumes;  ///< NTFS partitions, in partition order
};

/// Reads the partition table and every NTFS volume of `image` (or only partition
/// `only_partition`) and computes their metrics. Throws Error: Unsupported when no NTFS
/// volume is found or the requested partition does not exist or is not NTFS, and whatever
/// read_partitions / read_ntfs_volume throw, and check_copy_options for bad `copy`.
/// Progress is reported per volume in MFT records.
[[nodiscard]] ImageAnalysis analyze_image(const DiskImage& image, std::optional<int> only_partition = {},
                                          const Progress& progress = {}, const CopyOptions& copy = {});

}  // namespace guestfrag
