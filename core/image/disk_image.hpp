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

/// A piece of a layer's stored data that is contiguous both on the virtual disk and in
/// one of the layer's files: [virtual_offset, +length) lies at [file_offset, +length).
struct HostExtent {
    std::uint64_t virtual_offset = 0;
    std::uint64_t file_offset = 0;
    std::uint64_t length = 0;
    std::uint32_t file = 0;  ///< which file of the layer (VMDK extent index; 0 elsewhere)

    bool operator==(const HostExtent&) const = default;
};

/// Allocation of one layer of a (possibly layered) virtual disk.
/// depth 0 is the image that was named; depth 1 its parent (backing file), and so on.
struct Layer {
    int depth = 0;
    std::string path;
    std::string format;              ///< "raw", "qcow2", "vmdk", "vhd", "vhdx", ...
    std::uint64_t granule_size = 0;  ///< allocation unit of this layer, bytes
    /// Bytes the layer's file grows by when a write lands where it stores nothing: the
    /// granule, or the whole block of a VHD/VHDX whose sector bitmap has a finer granule.
    std::uint64_t growth_unit = 0;
    ByteSet allocated;               ///< virtual-disk bytes whose data lives in this layer
    ByteSet zero;                    ///< bytes this layer declares zero without storing them
    /// Where the stored data lies in the layer's files, in virtual-disk order, maximal
    /// (neighbours are never contiguous in both). Compressed data has no place and is
    /// missing, so these cover `allocated` less its compressed bytes.
    std::vector<HostExtent> host_extents;

    [[nodiscard]] std::uint64_t allocated_bytes() const { return boost::icl::length(allocated); }
    /// growth_unit, or the granule for layers that do not set one.
    [[nodiscard]] std::uint64_t growth_granule() const {
        return growth_unit != 0 ? growth_unit : granule_size;
    }
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
