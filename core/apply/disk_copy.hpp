// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

#include "core/image/disk_image.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class RateLimiter;

/// Writes the whole virtual disk of `image` into `fd`, a fresh empty file open for writing,
/// as a sparse raw disk: the file is sized to the disk, and only bytes that some layer
/// stores and that are not all zero are written (in 1 MiB blocks), so unallocated and zero
/// areas stay holes. Returns the bytes written. Throws Error(Io) for a host failure, what
/// DiskImage::read throws, and Error(Cancelled) from `progress` (bytes of the disk done).
/// Each block read first takes its bytes from `limiter` when there is one. With `only`,
/// nothing outside it is read or written (compaction leaves NTFS-free clusters out).
/// Cost: reads the allocated part of the image (within `only`) once; memory one block.
std::uint64_t copy_disk_sparse(const DiskImage& image, int fd, const Progress& progress = {},
                               RateLimiter* limiter = nullptr, const ByteSet* only = nullptr);

}  // namespace guestfrag
