// SPDX-License-Identifier: GPL-2.0-or-later
#include "analyzers/analysis.hpp"

#include "core/error.hpp"
#include "core/ntfs/volume_reader.hpp"

namespace guestfrag {

ImageAnalysis analyze_image(const DiskImage& image, std::optional<int> only_partition, const Progress& progress,
                            const CopyOptions& copy) {
    ImageAnalysis result;
    result.path = image.path();
    result.format = image.format();
    result.virtual_size = image.size();
    result.layers = image.layers();
    for (const Layer& layer : result.layers) result.host.push_back(analyze_host_layout(layer, 0, result.virtual_size));
    result.copy = analyze_copy_cost(image, copy);
    result.table = read_partitions(image);

    bool found_requested = false;
    for (const Partition& p : result.table.partitions) {
        if (only_partition && p.number != *only_partition) continue;
        found_requested = true;
        // Trust the boot sector over libparted's probe: a partition type byte can lie, and
        // a table can omit the type, but an NTFS volume always starts with its boot sector.
        if (!has_ntfs_boot_sector(image, p)) {
            if (only_partition)
                throw Error(ErrorKind::Unsupported,
                            "partition " + std::to_string(p.number) + " holds no NTFS file system");
            continue;
        }
        VolumeAnalysis volume;
        volume.map = read_ntfs_volume(image, p, progress);
        volume.files = analyze_file_fragmentation(volume.map);
        volume.free_space = analyze_free_space(volume.map);
        volume.layers = analyze_layer_usage(volume.map, result.layers);
        result.volumes.push_back(std::move(volume));
    }
    if (only_partition && !found_requested)
        throw Error(ErrorKind::Unsupported, "no partition " + std::to_string(*only_partition) + " on this disk");
    if (result.volumes.empty()) throw Error(ErrorKind::Unsupported, "no NTFS volume found on this disk");
    return result;
}

}  // namespace guestfrag
