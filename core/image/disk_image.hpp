// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/icl/interval_set.hpp>

#include "core/image/provisioning.hpp"

namespace guestfrag {

/// Container formats of an image file, recognised by their content (never by file name).
/// Detection tells the VMDK kinds apart; a layer and a child's record of its parent name
/// only the family (format_family), as hypervisors do.
enum class ImageFormat : std::uint8_t {
    Raw,             ///< anything not recognised below: the bytes are the disk
    Qcow2,           ///< "QFI\xfb" (qcow v1 shares the magic; the reader tells them apart)
    Vmdk,            ///< the VMDK family (never detected): what a VMDK layer is, of any kind
    VmdkSparse,      ///< hosted sparse extent, "KDMV" (monolithicSparse, streamOptimized, ...)
    VmdkDescriptor,  ///< VMDK text descriptor ("# Disk DescriptorFile") naming extent files
    VmdkCowd,        ///< vmfsSparse / COWD extent (-delta.vmdk), "COWD"
    VmdkSeSparse,    ///< seSparse extent (-sesparse.vmdk), constant header magic 0xcafebabe
    Vhdx,            ///< "vhdxfile"
    Vhd,             ///< "conectix" footer at the end (and its copy at the start of dynamic VHDs)
    Vdi,             ///< VirtualBox, signature 0xbeda107f at byte 64
    Qed,             ///< "QED\0"
};

/// One row of image_formats: everything guestfrag calls a format.
struct ImageFormatInfo {
    ImageFormat format;
    std::string_view name;       ///< printed name (reports, JSON, messages)
    ImageFormat family;          ///< the format a parent of this kind is recorded as
    /// qemu's name (as in a qcow2 backing-format extension) on the rows of families
    /// guestfrag reads; empty on the others, so that such a parent is refused up front.
    std::string_view qemu_name;
};

/// Every format, in enum order: the one table of names.
inline constexpr ImageFormatInfo image_formats[] = {
    {ImageFormat::Raw, "raw", ImageFormat::Raw, "raw"},
    {ImageFormat::Qcow2, "qcow2", ImageFormat::Qcow2, "qcow2"},
    {ImageFormat::Vmdk, "vmdk", ImageFormat::Vmdk, "vmdk"},
    {ImageFormat::VmdkSparse, "vmdk sparse", ImageFormat::Vmdk, ""},
    {ImageFormat::VmdkDescriptor, "vmdk descriptor", ImageFormat::Vmdk, ""},
    {ImageFormat::VmdkCowd, "vmdk cowd (vmfsSparse)", ImageFormat::Vmdk, ""},
    {ImageFormat::VmdkSeSparse, "vmdk seSparse", ImageFormat::Vmdk, ""},
    {ImageFormat::Vhdx, "vhdx", ImageFormat::Vhdx, "vhdx"},
    {ImageFormat::Vhd, "vhd", ImageFormat::Vhd, "vpc"},
    {ImageFormat::Vdi, "vdi", ImageFormat::Vdi, ""},
    {ImageFormat::Qed, "qed", ImageFormat::Qed, ""},
};

static_assert(
    [] {
        for (std::size_t i = 0; i < std::size(image_formats); ++i)
            if (static_cast<std::size_t>(image_formats[i].format) != i) return false;
        return std::size(image_formats) == static_cast<std::size_t>(ImageFormat::Qed) + 1;
    }(),
    "image_formats lists every ImageFormat once, in enum order");

/// The name reports, JSON and messages print for `format` ("qcow2", "vmdk sparse", ...).
[[nodiscard]] constexpr std::string_view format_name(ImageFormat format) noexcept {
    return image_formats[static_cast<std::size_t>(format)].name;
}

/// The family of `format`: ImageFormat::Vmdk for every VMDK kind, the format itself otherwise.
[[nodiscard]] constexpr ImageFormat format_family(ImageFormat format) noexcept {
    return image_formats[static_cast<std::size_t>(format)].family;
}

/// The format qemu calls `name` (as in a qcow2 backing-format extension), when guestfrag
/// reads it.
[[nodiscard]] constexpr std::optional<ImageFormat> format_from_qemu_name(std::string_view name) noexcept {
    for (const ImageFormatInfo& info : image_formats)
        if (!info.qemu_name.empty() && info.qemu_name == name) return info.format;
    return std::nullopt;
}

/// Whether `info` is a family guestfrag reads, which a user may name to override detection
/// (`--format`): raw, qcow2, vmdk, vhdx, vhd.
[[nodiscard]] constexpr bool is_readable_family(const ImageFormatInfo& info) noexcept {
    return info.family == info.format && !info.qemu_name.empty();
}

/// The readable family whose printed name is `name` ("raw", "qcow2", "vmdk", "vhd", "vhdx").
[[nodiscard]] constexpr std::optional<ImageFormat> readable_family_from_name(std::string_view name) noexcept {
    for (const ImageFormatInfo& info : image_formats)
        if (is_readable_family(info) && info.name == name) return info.format;
    return std::nullopt;
}

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

/// A piece of a host file that lies contiguously on the host file system's device, as
/// FIEMAP reports it: file bytes [logical, +length) at device bytes [physical, +length).
struct PhysicalExtent {
    std::uint64_t logical = 0;
    std::uint64_t physical = 0;
    std::uint64_t length = 0;

    bool operator==(const PhysicalExtent&) const = default;
};

/// Where one of a layer's raw or flat files lies on the host's device: a second level
/// below the host runs (HostExtent), for the file systems that can tell (FIEMAP on ext4,
/// XFS, btrfs). `note` says why it is unknown (tmpfs, a block device, bytes in memory).
struct PhysicalFile {
    std::uint32_t file = 0;            ///< the layer's file index (HostExtent::file)
    std::string path;                  ///< the host file
    std::vector<PhysicalExtent> extents;  ///< in file order; empty when not known
    std::string note;                  ///< empty when the extents are known
    /// Extents the file system reported without a device place yet (delayed allocation,
    /// data still in the page cache): left out of `extents`.
    std::uint64_t unplaced_extents = 0;

    [[nodiscard]] bool known() const noexcept { return note.empty(); }
};

/// One file of a layer whose files split the virtual disk between them (a VMDK's extents).
struct LayerFileSpan {
    std::uint64_t start = 0;  ///< where the file's range of the virtual disk begins
    /// For a file that holds its range in place (a FLAT extent): the file offset of
    /// `start`, so that a write lands at its own place. Absent for a file that appends
    /// what is written new (a sparse extent) and for a ZERO extent.
    std::optional<std::uint64_t> in_place_offset;

    bool operator==(const LayerFileSpan&) const = default;
};

/// Allocation of one layer of a (possibly layered) virtual disk.
/// depth 0 is the image that was named; depth 1 its parent (backing file), and so on.
struct Layer {
    int depth = 0;
    std::string path;
    ImageFormat format = ImageFormat::Raw;  ///< the layer's family (never a VMDK kind)
    std::uint64_t granule_size = 0;  ///< allocation unit of this layer, bytes
    /// Bytes the layer's file grows by when a write lands where it stores nothing: the
    /// granule, or the whole block of a VHD/VHDX whose sector bitmap has a finer granule.
    std::uint64_t growth_unit = 0;
    ByteSet allocated;               ///< virtual-disk bytes whose data lives in this layer
    /// Bytes this layer declares zero without storing them, where a layer below it stores
    /// data. Elsewhere a declared zero reads as an unallocated byte does and is not kept.
    ByteSet zero;
    /// Where the stored data lies in the layer's files, in virtual-disk order, maximal
    /// (neighbours are never contiguous in both). Compressed data has no place and is
    /// missing, so these cover `allocated` less its compressed bytes.
    std::vector<HostExtent> host_extents;
    /// The layer's files in disk order where files split the disk between them (a VMDK's
    /// extents, ZERO ones included): file i (HostExtent::file) holds [file_spans[i].start,
    /// file_spans[i + 1].start). Empty for the single-file formats. Tells where a write
    /// that allocates lands.
    std::vector<LayerFileSpan> file_spans;
    /// What is wrong with the layer's file although it can be read (LayerFile::warnings),
    /// one line each; front ends show them.
    std::vector<std::string> warnings;
    /// How the storage under the layer provisions blocks, as the format records it
    /// (LayerFile::provisioning).
    LayerProvisioning provisioning;

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

    /// Container format (family) of the top layer.
    [[nodiscard]] virtual ImageFormat format() const = 0;

    /// Path the image was opened from.
    [[nodiscard]] virtual const std::string& path() const = 0;

    /// Allocation per layer, top layer first. A raw file is a single layer.
    [[nodiscard]] virtual const std::vector<Layer>& layers() const = 0;

    /// The physical extents of layer `layer`'s raw or flat files (a raw image, a raw
    /// parent, a VMDK's FLAT/VMFS extents), read from the host now (FIEMAP: cost
    /// proportional to the files' extents); empty for container files (their host runs
    /// are the layer's host_extents) and images not read from host files. Throws Error(Io).
    [[nodiscard]] virtual std::vector<PhysicalFile> physical_files(std::size_t layer) const {
        (void)layer;
        return {};
    }

    /// Union of what every layer stores (or declares zero): outside it the disk reads as zeros.
    [[nodiscard]] ByteSet stored() const {
        ByteSet out;
        for (const Layer& layer : layers()) out += layer.allocated;
        return out;
    }
};

}  // namespace guestfrag
