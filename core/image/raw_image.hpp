// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/image/byte_source.hpp"

namespace guestfrag {

/// A raw (flat) disk: a source whose bytes are the virtual disk (a regular file, a
/// block device, bytes in memory). Reads go through the shared ByteSource, so one
/// RawImage serves several threads. Its single layer's allocation is what the source
/// knows of its holes (a file: SEEK_DATA/SEEK_HOLE), in the source's allocation unit.
class RawImage final : public DiskImage {
public:
    /// Opens the host file at `path` read-only and maps its host allocation (one pass of
    /// SEEK_DATA/SEEK_HOLE, cost proportional to the number of data extents).
    /// Throws Error(NotFound) when the file does not exist, Error(Unsupported) for a
    /// directory or another non-regular, non-block file, Error(Corrupt) for an empty file
    /// and Error(Io) for any other OS failure. The messages omit the path (the caller
    /// names the image it opened).
    explicit RawImage(std::string path);

    /// Reads `source` (non-null) as a raw disk. Throws Error(Corrupt) when it is empty,
    /// Error(Io) when its allocation cannot be mapped.
    explicit RawImage(std::shared_ptr<const ByteSource> source);

    [[nodiscard]] std::uint64_t size() const override { return source_->size(); }

    /// Ranges the allocation map (taken at open) calls holes are zero-filled; the rest is
    /// read from the source. Throws Error(Corrupt) when the range extends past size(),
    /// Error(Io) on a read failure or when the file shrank.
    void read(std::uint64_t offset, std::span<std::byte> out) const override;

    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Raw; }
    [[nodiscard]] const std::string& path() const override { return source_->name(); }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return layers_; }
    /// The source's physical layout (FIEMAP) as layer 0's only file.
    [[nodiscard]] std::vector<PhysicalFile> physical_files(std::size_t layer) const override;

    /// True when the image is a block device rather than a regular file.
    [[nodiscard]] bool is_block_device() const noexcept { return source_->is_block_device(); }

    /// The source read, shared with whoever opens the same bytes as another format.
    [[nodiscard]] const std::shared_ptr<const ByteSource>& source() const noexcept { return source_; }

private:
    std::shared_ptr<const ByteSource> source_;
    std::vector<Layer> layers_;
};

}  // namespace guestfrag
