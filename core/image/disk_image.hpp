// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <boost/icl/interval_set.hpp>

namespace guestfrag {

/// Byte ranges [lower, upper) of the virtual disk.
using ByteSet = boost::icl::interval_set<std::uint64_t>;

/// Allocation of one layer of a (possibly layered) virtual disk.
/// depth 0 is the image that was named; depth 1 its parent (backing file), and so on.
struct Layer {
    int depth = 0;
    std::string path;
    std::string format;              ///< "raw", "qcow2", "vmdk", "vhd", "vhdx", ...
    std::uint64_t granule_size = 0;  ///< allocation unit of this layer, bytes
    ByteSet allocated;               ///< virtual-disk bytes whose data lives in this layer
    ByteSet zero;                    ///< bytes this layer declares zero without storing them

    [[nodiscard]] std::uint64_t allocated_bytes() const { return boost::icl::length(allocated); }
};

/// The one seam for reading guest disks (raw, VMDK, VHD, VHDX, qcow2 and chains).
/// Implementations are immutable after construction and safe to read from several
/// threads at once. Opened read-only: nothing here can write the image.
class DiskImage {
public:
    virtual ~DiskImage() = default;
    DiskImage() = default;
    DiskImage(const DiskImage&) = delete;
    DiskImage& operator=(const DiskImage&) = delete;

    /// Virtual disk size in bytes.
    [[nodiscard]] virtual std::uint64_t size() const = 0;

    /// Fills `out` with the virtual-disk bytes at `offset`. Unallocated areas read as zero.
    /// Throws Error(Io) on an OS failure and Error(Corrupt) when the range lies past size()
    /// or the image's own tables point outside its file.
    virtual void read(std::uint64_t offset, std::span<std::byte> out) const = 0;

    /// Container format of the top layer ("raw", "qcow2", ...).
    [[nodiscard]] virtual std::string format() const = 0;

    /// Path the image was opened from.
    [[nodiscard]] virtual const std::string& path() const = 0;

    /// Allocation per layer, top layer first. A raw file is a single layer.
    [[nodiscard]] virtual const std::vector<Layer>& layers() const = 0;
};

}  // namespace guestfrag
