// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/image/layer_file.hpp"
#include "core/image/vhdx_bat.hpp"
#include "core/image/vhdx_format.hpp"
#include "core/image/vhdx_log.hpp"

namespace guestfrag {

/// One VHDX file (fixed, dynamic or differencing, MS-VHDX v1.0) as a layer. At open the
/// current header is chosen, the log replayed in memory when the header names one (so a
/// disk that was not closed cleanly reads as Hyper-V would see it; nothing is written),
/// the region table, metadata and the whole BAT read (in slices) and validated (memory: per
/// run of ZERO or of stored blocks, nothing for empty ones; see vhdx::Bat). Sector bitmaps
/// of differencing disks are read on demand into a small mutex-guarded cache, so const
/// methods are thread-safe.
///
/// Allocation reported by map():
///  - fully present blocks: Data at their own file offset;
///  - zero blocks (state ZERO): Zero;
///  - not present, undefined and unmapped blocks: Unallocated (zero without a parent, the
///    parent's bytes in a differencing disk);
///  - partially present blocks (differencing): per logical sector, Data where the chunk's
///    sector bitmap bit is 1, else Unallocated.
/// Granule: the block size, or the logical sector size in a differencing disk.
/// identity() is the header's DataWriteGuid as lower-case 8-4-4-4-12 text; a differencing
/// disk's parent() expects its parent_linkage in the same form.
class VhdxLayer final : public LayerFile {
public:
    /// Reads and validates `file`. Throws Error(Io) from the file, Error(Corrupt)
    /// for damaged structures (checksums of both headers or both region tables, tables or
    /// blocks past the end of the file, invalid block sizes, sector sizes, virtual sizes or
    /// BAT states, overlapping blocks), Error(Unsupported) for unknown required regions and
    /// metadata items, header versions other than 1 and logs over vhdx::kMaxLogBytes.
    explicit VhdxLayer(HostFile file);
    /// Opens the host file at `path` and reads it as above (plus Error(NotFound) and the
    /// other errors of opening it).
    explicit VhdxLayer(const std::string& path) : VhdxLayer(HostFile(path)) {}

    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Vhdx; }
    [[nodiscard]] const std::string& path() const override { return file_.path(); }
    [[nodiscard]] std::uint64_t virtual_size() const override { return meta_.virtual_size; }
    [[nodiscard]] std::uint64_t granule_size() const override {
        return meta_.has_parent ? meta_.logical_sector_size : meta_.block_size;
    }
    [[nodiscard]] std::uint64_t growth_unit() const override { return meta_.block_size; }
    /// Dynamic and differencing: thin in payload blocks; fixed (LeaveBlockAllocated):
    /// eager, assumed.
    [[nodiscard]] LayerProvisioning provisioning(bool) const override;
    /// Runs coalesce blocks (and sectors) of one state, and for Data contiguous file
    /// offsets; one call examines at most a bounded number of blocks.
    [[nodiscard]] Mapping map(std::uint64_t offset) const override;
    void read(std::uint64_t offset, std::span<std::byte> out) const override;
    /// For a differencing disk: candidates relative_path (against this file's directory),
    /// absolute_win32_path when it is a host path, then the file name of
    /// absolute_win32_path and of relative_path in this file's directory; recorded is
    /// absolute_win32_path, else relative_path; expected_identities are parent_linkage and
    /// parent_linkage2 (if any); the format is vhdx.
    [[nodiscard]] std::optional<ParentLink> parent() const override;
    [[nodiscard]] std::optional<std::string> identity() const override { return header_.data_write_guid.text(); }
    [[nodiscard]] std::uint64_t held_bytes() const override { return file_.held_bytes(); }

    [[nodiscard]] const vhdx::Header& header() const { return header_; }
    [[nodiscard]] const vhdx::Metadata& metadata() const { return meta_; }
    /// Log entries replayed at open (0 for a cleanly closed disk).
    [[nodiscard]] std::size_t replayed_log_entries() const { return file_.replayed_entries(); }

private:
    struct Parts;
    [[nodiscard]] static Parts load(HostFile host);
    explicit VhdxLayer(Parts parts);

    /// The bits of one block's part of a sector bitmap, bit i = logical sector i.
    using Bitmap = std::vector<std::uint64_t>;
    /// [start, end) of the virtual disk in one state; `host` is the file offset of `start`.
    struct Run {
        std::uint64_t start = 0;
        std::uint64_t end = 0;
        Allocation state = Allocation::Unallocated;
        std::uint64_t host = 0;
    };

    [[nodiscard]] Run compute_run(std::uint64_t offset) const;
    [[nodiscard]] std::shared_ptr<const Bitmap> bitmap(std::uint64_t block) const;
    /// End of the run of equal bitmap bits starting at `sector` (block-relative), capped at
    /// `limit` sectors.
    [[nodiscard]] static std::uint64_t bit_run_end(const Bitmap& bits, std::uint64_t sector, std::uint64_t limit);

    vhdx::Header header_;
    vhdx::FileView file_;
    vhdx::Metadata meta_;
    vhdx::Bat bat_;
    /// parent_linkage, then parent_linkage2 when it is another, non-nil GUID; empty
    /// without a parent.
    std::vector<vhdx::Guid> parent_linkages_;

    mutable std::mutex mutex_;  ///< guards everything below
    mutable std::list<std::pair<std::uint64_t, std::shared_ptr<const Bitmap>>> bitmaps_;  ///< most recent first
    mutable std::optional<Run> last_run_;  ///< makes sequential map() calls O(1)
};

}  // namespace guestfrag
