// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/image/disk_image.hpp"

namespace guestfrag {

/// How one layer of a virtual disk stores a range of virtual-disk bytes.
enum class Allocation : std::uint8_t {
    Unallocated,  ///< not in this layer: the parent's bytes show through (zero without one)
    Zero,         ///< this layer declares the range zero without storing data
    Data,         ///< this layer stores the bytes
};

/// The answer to LayerFile::map: the state at an offset and how far it holds.
struct Mapping {
    Allocation state = Allocation::Unallocated;
    std::uint64_t length = 0;  ///< bytes from the queried offset with this state (≥ 1)
    /// Where the data lies in the layer's file, when it is stored uncompressed and the
    /// whole `length` is contiguous there; used for host-level fragmentation figures.
    std::optional<std::uint64_t> file_offset;
    /// Which of the layer's files `file_offset` is in: the extent index of a multi-file
    /// VMDK (twoGbMaxExtentSparse, several FLAT extents), 0 for single-file formats.
    std::uint32_t file_index = 0;
};

/// The parent a differencing/backing layer names, as recorded in the layer.
struct ParentLink {
    std::string recorded;                 ///< the name as the file records it, for messages
    std::vector<std::string> candidates;  ///< host paths to try, in the hypervisor's order
    /// The parent's format family as the child records it (qcow2's backing-format
    /// extension; implied by VMDK, VHD and VHDX differencing), when it is one guestfrag
    /// reads. A recorded raw parent is opened as raw without looking at its content; any
    /// other must be the family of the parent's content.
    std::optional<ImageFormat> format;
    /// The child's own name for the parent's format ("vpc" in qcow2), for messages; set
    /// with no `format` when the child names one guestfrag does not read. Empty when the
    /// child records no format (the parent is then recognised by its content).
    std::string recorded_format;
    /// The values any one of which the parent's identity() may have (VHD unique id, VHDX
    /// parent_linkage and parent_linkage2, VMDK CID); empty when the child records none.
    std::vector<std::string> expected_identities;
};

/// The last component of a recorded parent name, Windows or POSIX (C:\vm\base.vhd →
/// "base.vhd"): what a parent file is called wherever it was moved.
[[nodiscard]] std::string recorded_file_name(const std::string& recorded);

/// One file of a disk chain, read through its format's own allocation tables (qcow2
/// L1/L2, VMDK grain tables, VHD/VHDX BAT and sector bitmaps). Immutable once opened and
/// safe to use from several threads. Chains of LayerFiles become a DiskImage in
/// ChainImage; this interface is what each format reader implements.
class LayerFile {
public:
    virtual ~LayerFile() = default;
    LayerFile() = default;
    LayerFile(const LayerFile&) = delete;
    LayerFile& operator=(const LayerFile&) = delete;

    /// The layer's format family (ImageFormat::Vmdk for every VMDK kind).
    [[nodiscard]] virtual ImageFormat format() const = 0;
    [[nodiscard]] virtual const std::string& path() const = 0;
    [[nodiscard]] virtual std::uint64_t virtual_size() const = 0;
    /// The allocation unit of this layer in bytes (qcow2 cluster, VMDK grain, VHD block
    /// sector, ...): Mapping runs start and end on multiples of it (or the disk's end).
    [[nodiscard]] virtual std::uint64_t granule_size() const = 0;

    /// How much the layer's file grows when a write lands where it stores nothing: the
    /// granule for most formats, the whole block for VHD/VHDX (a differencing block is
    /// allocated whole even though its sector bitmap tracks 512-byte sectors).
    [[nodiscard]] virtual std::uint64_t growth_unit() const { return granule_size(); }

    /// State of the byte at `offset` (< virtual_size()) and how many bytes share it.
    /// Implementations coalesce neighbouring table entries so that a large unallocated
    /// disk maps in few calls. Throws Error(Corrupt) when a table entry points outside the
    /// file, Error(Io) on a read failure.
    [[nodiscard]] virtual Mapping map(std::uint64_t offset) const = 0;

    /// Reads virtual-disk bytes that this layer stores (or declares zero). The caller
    /// keeps [offset, offset + out.size()) inside one mapping run returned by map().
    virtual void read(std::uint64_t offset, std::span<std::byte> out) const = 0;

    /// The parent this layer needs, if it is a differencing or backed layer.
    [[nodiscard]] virtual std::optional<ParentLink> parent() const = 0;

    /// Bytes the layer's files really hold (ByteSource::held_bytes summed over them). A
    /// layer whose map() reports far more separately placed runs than these bytes could
    /// hold is refused when it is mapped (ChainImage), before its runs exhaust memory.
    [[nodiscard]] virtual std::uint64_t held_bytes() const = 0;

    /// The identity a child's ParentLink::expected_identities is compared with (VHD footer
    /// unique id, VHDX DataWriteGuid, VMDK CID as lower-case hex), if the format has one.
    [[nodiscard]] virtual std::optional<std::string> identity() const { return std::nullopt; }

    /// What is wrong with the file although the layer is read anyway (a truncated fixed
    /// VHD), one lower-case line each; empty for an intact file.
    [[nodiscard]] virtual std::vector<std::string> warnings() const { return {}; }

    /// How the storage under this layer provisions blocks, from what the format records
    /// (docs/formats.md "Provisioning"); `fully_allocated` says whether the layer stores
    /// every byte of the disk (its map has no unallocated or zero run).
    [[nodiscard]] virtual LayerProvisioning provisioning(bool fully_allocated) const = 0;

    /// Layer::file_spans: the layer's files where they split the disk between them; empty
    /// for the single-file formats.
    [[nodiscard]] virtual std::vector<LayerFileSpan> file_spans() const { return {}; }

    /// DiskImage::physical_files for this layer: its raw or flat files' physical extents
    /// (FIEMAP, read now); empty for container files. Throws Error(Io).
    [[nodiscard]] virtual std::vector<PhysicalFile> physical_files() const { return {}; }

    /// Drops what the layer holds only to answer map() and read() quicker (tables read on
    /// demand), which later calls read again. ChainImage calls it once the layer's map is
    /// built, so a deep chain does not keep every layer's tables from its mapping pass.
    virtual void release_caches() const {}
};

class ByteSource;    // core/image/byte_source.hpp
class SourceOpener;  // core/image/source_opener.hpp

/// Opens one layer file, choosing the reader by content. Throws Error(Unsupported) for
/// a format without a reader, and the reader's errors otherwise.
[[nodiscard]] std::unique_ptr<LayerFile> open_layer(const std::string& path);

/// Opens one layer file with the reader for `format`, without looking at its content (a
/// format already sniffed, or a raw parent as its child records it). Throws like
/// open_layer(path).
[[nodiscard]] std::unique_ptr<LayerFile> open_layer(const std::string& path, ImageFormat format);

/// Opens the layer whose bytes are `source` (non-null), choosing the reader by content;
/// files it names (VMDK extents) are opened through `opener`. Throws like open_layer(path).
[[nodiscard]] std::unique_ptr<LayerFile> open_layer(std::shared_ptr<const ByteSource> source,
                                                    const SourceOpener& opener);

/// Opens the layer whose bytes are `source` with the reader for `format`, without looking
/// at its content; files it names are opened through `opener`.
[[nodiscard]] std::unique_ptr<LayerFile> open_layer(std::shared_ptr<const ByteSource> source, ImageFormat format,
                                                    const SourceOpener& opener);

}  // namespace guestfrag
