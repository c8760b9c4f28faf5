// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>

#include "core/image/disk_image.hpp"
#include "core/image/host_file.hpp"
#include "core/image/vmdk_extent.hpp"

namespace guestfrag {

/// A FLAT or VMFS extent: `size` bytes of plain data starting `file_start` bytes into the
/// file. Flat files on NFS, VMFS thin and hosted file systems are thin, so the host's
/// holes (SEEK_DATA/SEEK_HOLE, host block granule, as for raw images) tell what is
/// stored: holes are Unallocated, or Zero when the layer has a parent (a flat extent hides
/// its parent entirely).
class VmdkFlatExtent final : public VmdkExtent {
public:
    /// Maps the host allocation of the extent's range once. Throws Error(Corrupt) when the
    /// file is shorter than file_start + size, Error(Io) when the host cannot be asked.
    VmdkFlatExtent(HostFile file, std::uint64_t file_start, std::uint64_t size, bool holes_are_zero);

    [[nodiscard]] std::uint64_t size() const override { return size_; }
    [[nodiscard]] std::uint64_t granule() const override { return granule_; }
    [[nodiscard]] std::uint64_t file_start() const override { return file_start_; }
    [[nodiscard]] std::uint64_t held_bytes() const override { return file_.source().held_bytes(); }
    [[nodiscard]] Mapping map(std::uint64_t offset) const override;
    void read(std::uint64_t offset, std::span<std::byte> out) const override;
    [[nodiscard]] std::string kind() const override { return "flat"; }
    [[nodiscard]] bool writes_in_place() const override { return true; }
    [[nodiscard]] std::optional<PhysicalFile> physical_file() const override { return file_.source().physical_layout(); }

    [[nodiscard]] const HostFile& file() const noexcept { return file_; }

private:
    HostFile file_;
    std::uint64_t file_start_;
    std::uint64_t size_;
    bool holes_are_zero_;
    std::uint64_t granule_ = 512;
    ByteSet stored_;  ///< extent-relative byte ranges the host stores
};

/// A ZERO extent: `size` bytes that read as zeros, with no file.
class VmdkZeroExtent final : public VmdkExtent {
public:
    explicit VmdkZeroExtent(std::uint64_t size) : size_(size) {}

    [[nodiscard]] std::uint64_t size() const override { return size_; }
    [[nodiscard]] std::uint64_t granule() const override { return 0; }
    [[nodiscard]] Mapping map(std::uint64_t offset) const override {
        return {Allocation::Zero, size_ - offset, std::nullopt};
    }
    void read(std::uint64_t offset, std::span<std::byte> out) const override;
    [[nodiscard]] std::uint64_t held_bytes() const override { return 0; }
    [[nodiscard]] std::string kind() const override { return "zero"; }

private:
    std::uint64_t size_;
};

}  // namespace guestfrag
