// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/image/unique_fd.hpp"

namespace guestfrag {

/// A raw (flat) disk: a regular file or a block device whose bytes are the virtual disk.
/// Opened O_RDONLY; reads use pread() only, so one RawImage serves several threads.
/// Its single layer's allocation comes from the host file system's holes
/// (SEEK_DATA/SEEK_HOLE), in units of the host block size (st_blksize).
class RawImage final : public DiskImage {
public:
    /// Opens `path` read-only and maps its host allocation (one pass of SEEK_DATA/SEEK_HOLE,
    /// cost proportional to the number of data extents).
    /// Throws Error(NotFound) when the file does not exist, Error(Unsupported) for a
    /// directory or another non-regular, non-block file, Error(Corrupt) for an empty file
    /// and Error(Io) for any other OS failure.
    explicit RawImage(std::string path);

    [[nodiscard]] std::uint64_t size() const override { return size_; }

    /// Ranges the host allocation map (taken at open) calls holes are zero-filled; the
    /// rest is read with a pread() loop (EINTR and short reads handled). Throws
    /// Error(Corrupt) when the range extends past size(), Error(Io) with the OS's text on
    /// failure or when the file shrank.
    void read(std::uint64_t offset, std::span<std::byte> out) const override;

    [[nodiscard]] std::string format() const override { return "raw"; }
    [[nodiscard]] const std::string& path() const override { return path_; }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return layers_; }

    /// True when the image is a block device rather than a regular file.
    [[nodiscard]] bool is_block_device() const noexcept { return block_device_; }

private:
    /// Reads exactly out.size() bytes at `offset` from the file.
    void pread_exact(std::uint64_t offset, std::span<std::byte> out) const;

    std::string path_;
    UniqueFd fd_;
    std::uint64_t size_ = 0;
    bool block_device_ = false;
    std::vector<Layer> layers_;
};

/// Byte ranges of the open regular file `fd` that hold data on the host, found with
/// SEEK_DATA/SEEK_HOLE over [0, size) and widened to whole `granule`s (clipped to size).
/// When the host file system cannot report holes, the whole range counts as allocated.
/// Moves the descriptor's file offset (callers that share `fd` must use pread()).
/// Throws Error(Io) when lseek fails for a reason other than "no holes support".
[[nodiscard]] ByteSet host_allocation(int fd, std::uint64_t size, std::uint64_t granule);

}  // namespace guestfrag
