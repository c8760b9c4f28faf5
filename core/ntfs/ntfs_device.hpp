// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

struct ntfs_device;

namespace guestfrag {

class DiskImage;

namespace ntfs {

/// Allocates a libntfs-3g device whose reads are served from image bytes
/// [offset, offset + length). Writes fail with EROFS: analysis never writes an image.
/// Ownership: pass the device to ntfs_device_mount; ntfs_umount frees it. If the mount
/// fails the caller frees it with ntfs_device_free. The device's private state is released
/// by its close operation. Returns nullptr (errno set) when allocation fails.
[[nodiscard]] ntfs_device* make_image_device(const DiskImage& image, std::uint64_t offset, std::uint64_t length);

}  // namespace ntfs
}  // namespace guestfrag
