// SPDX-License-Identifier: GPL-2.0-or-later
// The one place that owns libntfs-3g handles.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

struct _ntfs_volume;

namespace guestfrag {

class DiskImage;

namespace ntfs {

struct VolumeUnmounter {
    void operator()(_ntfs_volume* volume) const noexcept;
};

/// A mounted, read-only libntfs-3g volume. Unmounting also frees its device.
using VolumeHandle = std::unique_ptr<_ntfs_volume, VolumeUnmounter>;

/// Mounts the NTFS file system stored in image bytes [offset, offset + length) read-only,
/// through ntfs_device_operations that read the DiskImage (see ntfs_device.hpp). The image
/// must outlive the handle. Throws Error(Corrupt) with libntfs-3g's own reason when the
/// volume cannot be mounted.
[[nodiscard]] VolumeHandle mount_read_only(const DiskImage& image, std::uint64_t offset, std::uint64_t length);

/// The last error libntfs-3g logged on this thread ("" if none), squashed to one line.
/// libntfs-3g reports through its logger, not errno alone; we keep its words for our errors.
[[nodiscard]] std::string last_library_message();

/// Routes libntfs-3g's logging into last_library_message() instead of stderr (idempotent).
void capture_library_log();

}  // namespace ntfs
}  // namespace guestfrag
