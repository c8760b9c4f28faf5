// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "core/model/volume_map.hpp"
#include "core/partition/partition.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class DiskImage;

/// What read_ntfs_volume keeps besides the allocation.
enum class VolumeDetail {
    Full,        ///< everything below
    /// Streams, their runs and names, free space and the MFT's figures; no file table
    /// (VolumeMap::files empty) and no placement by path (pagefile, VSS stores): what
    /// proving a copy's allocation and contents needs, without 32 bytes and a name a file.
    Allocation,
};

/// Reads the cluster map of the NTFS volume in `partition`: every in-use file's
/// non-resident streams with their runs (attribute lists and runlists spread over extension
/// records merged), names, free space from $Bitmap, the MFT zone, and unmovable/excluded
/// placement. Read-only. Throws Error: Unsupported (no NTFS here), Corrupt (boot sector,
/// MFT or runlists inconsistent), Unsafe (dirty or hibernated volume), Io, Cancelled.
/// Cost: one sequential pass over $MFT and $Bitmap; memory O(files + extents).
[[nodiscard]] VolumeMap read_ntfs_volume(const DiskImage& image, const Partition& partition,
                                         const Progress& progress = {}, VolumeDetail detail = VolumeDetail::Full);

/// The map of `partition`'s $MFT alone, as libntfs-3g's mount finds it in record 0 (and
/// the extension records $MFT's attribute list names): its figures as read_ntfs_volume
/// gives them, and $MFT's $DATA and $BITMAP streams; no files, no free space. For reading
/// records while the whole map is still being read. Throws as read_ntfs_volume does.
/// Cost: a mount.
[[nodiscard]] VolumeMap read_mft_map(const DiskImage& image, const Partition& partition);

/// Whether the first sector of `partition` is an NTFS boot sector (cheap check, no mount).
[[nodiscard]] bool has_ntfs_boot_sector(const DiskImage& image, const Partition& partition);

}  // namespace guestfrag
