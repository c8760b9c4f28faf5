// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

#include "core/image/disk_image.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class RateLimiter;

/// What copy_disk_sparse wrote.
struct SparseCopy {
    std::uint64_t bytes_written = 0;
    /// The blocks of `hole_block` bytes (clipped to the disk) that some write touched: what
    /// the file stores, each block tested non-zero.
    ByteSet blocks;
};

struct SparseCopyOptions {
    /// When set, nothing outside it is read or written (compaction leaves NTFS-free clusters
    /// out).
    const ByteSet* only = nullptr;
    /// The unit tested for zeros, a power of two dividing 1 MiB: a block whose bytes read all
    /// zero is not written and stays a hole. Compaction gives the file system's block, so
    /// no later pass has to read the copy again to find zero blocks.
    std::uint64_t hole_block = std::uint64_t{1} << 20;
};

/// Writes the whole virtual disk of `image` into `fd`, a fresh empty file open for writing,
/// as a sparse raw disk: the file is sized to the disk, and only bytes that some layer
/// stores and that are not in an all-zero block are written, so unallocated and zero areas
/// stay holes. Throws Error(Io) for a host failure, Error(Internal) for a bad hole_block,
/// what DiskImage::read throws, and Error(Cancelled) from `progress` (bytes of the disk
/// done). Each 1 MiB read first takes its bytes from `limiter` when there is one.
/// Cost: reads the allocated part of the image (within `only`) once; memory 1 MiB and the
/// written blocks as intervals.
SparseCopy copy_disk_sparse(const DiskImage& image, int fd, const Progress& progress = {},
                            RateLimiter* limiter = nullptr, const SparseCopyOptions& options = {});

}  // namespace guestfrag
