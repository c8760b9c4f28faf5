// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace guestfrag {

class DiskImage;

/// One partition (or the whole disk when it carries a bare file system). Bytes.
struct Partition {
    int number = 0;           ///< as libparted/mmls number it (1-based); 0 = whole disk, no table
    std::uint64_t start = 0;  ///< byte offset on the virtual disk
    std::uint64_t length = 0; ///< bytes
    std::string type;         ///< "primary", "logical", "gpt" or "whole-disk"
    std::string filesystem;   ///< libparted's probe ("ntfs", "fat32", ...) or "" if unknown
};

struct PartitionTable {
    std::string label;  ///< "msdos", "gpt", or "none" for a bare file system
    std::vector<Partition> partitions;  ///< in number order; extended containers omitted
};

/// Reads the partition table of `image` with libparted, through the DiskImage (never a
/// path on the host). A disk without a table whose first sector is an NTFS boot sector
/// yields one whole-disk partition. Throws Error(Corrupt) for a table that points past
/// the end of the disk, Error(Unsupported) for a disk with neither table nor NTFS.
[[nodiscard]] PartitionTable read_partitions(const DiskImage& image);

}  // namespace guestfrag
