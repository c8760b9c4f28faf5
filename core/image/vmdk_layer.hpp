// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/vmdk_descriptor.hpp"
#include "core/image/vmdk_extent.hpp"

namespace guestfrag {

/// One VMDK disk (descriptor plus extents, or a single sparse file) as a layer of a
/// chain. The extents cover the virtual disk in order; map() and read() dispatch to the
/// extent holding an offset. Immutable once built; const methods are thread-safe.
class VmdkLayer final : public LayerFile {
public:
    /// An extent and where it starts on the virtual disk (bytes).
    struct Placed {
        std::uint64_t start = 0;
        std::unique_ptr<VmdkExtent> extent;
        std::string name;  ///< the file as the descriptor names it (empty for ZERO), for messages
    };

    /// Takes the extents (non-empty, contiguous from 0, checked by open_vmdk), the
    /// descriptor that listed them or was embedded (if any) and the resolved parent link.
    VmdkLayer(std::string path, std::optional<VmdkDescriptor> descriptor, std::vector<Placed> extents,
              std::optional<ParentLink> parent);

    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Vmdk; }
    [[nodiscard]] const std::string& path() const override { return path_; }
    [[nodiscard]] std::uint64_t virtual_size() const override { return size_; }
    /// The smallest extent granule, reduced to a power of two that divides every extent
    /// start (and flat file offset), so that runs of every extent fall on it.
    [[nodiscard]] std::uint64_t granule_size() const override { return granule_; }
    /// Runs end at extent boundaries, except that unallocated and zero runs continue into
    /// following extents (a few at a time). `file_offset` is an offset in the extent's own
    /// file.
    [[nodiscard]] Mapping map(std::uint64_t offset) const override;
    /// Any range of the disk; extents and grains are split as needed.
    void read(std::uint64_t offset, std::span<std::byte> out) const override;
    [[nodiscard]] std::optional<ParentLink> parent() const override { return parent_; }
    /// The descriptor's CID as 8 lower-case hex digits; none without a descriptor.
    [[nodiscard]] std::optional<std::string> identity() const override;
    /// The sum over the extents: each names a file of its own (open_vmdk refuses a
    /// sparse extent file named twice).
    [[nodiscard]] std::uint64_t held_bytes() const override;
    /// One span per extent (the extent index is the file index), FLAT ones in place.
    [[nodiscard]] std::vector<LayerFileSpan> file_spans() const override;
    /// One entry per FLAT extent, with the extent's index as its file.
    [[nodiscard]] std::vector<PhysicalFile> physical_files() const override;
    /// Sparse kinds: thin in grains; ddb.thinProvisioned = 1: thin in VMFS file blocks;
    /// createType vmfs*: lazy, assumed; other flat disks: as their host files (raw_provisioning).
    [[nodiscard]] LayerProvisioning provisioning(bool fully_allocated) const override;

    /// The descriptor (separate file or embedded), if the disk has one.
    [[nodiscard]] const std::optional<VmdkDescriptor>& descriptor() const noexcept { return descriptor_; }
    [[nodiscard]] const std::vector<Placed>& extents() const noexcept { return extents_; }

private:
    [[nodiscard]] std::size_t extent_at(std::uint64_t offset) const;
    [[noreturn]] void rethrow_in_extent(std::size_t index, const Error& error) const;

    std::string path_;
    std::optional<VmdkDescriptor> descriptor_;
    std::vector<Placed> extents_;
    std::optional<ParentLink> parent_;
    std::uint64_t size_ = 0;
    std::uint64_t granule_ = 512;
};

/// Formats a CID the way identity() and ParentLink::expected_identities use it.
[[nodiscard]] std::string vmdk_cid_text(std::uint32_t cid);

}  // namespace guestfrag
