// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/image/host_file.hpp"
#include "core/image/vmdk_grain_extent.hpp"

namespace guestfrag {

/// The validated 2048-byte header of a COWD (vmfsSparse, "-delta.vmdk") extent.
/// Offsets and sizes in sectors.
struct VmdkCowdHeader {
    static constexpr std::uint32_t kFlagRoot = 0x1;  ///< no parent named in the header
    static constexpr std::uint32_t kGtesPerGt = 4096;
    static constexpr std::uint64_t kHeaderSectors = 4;

    std::uint32_t version = 0;
    std::uint32_t flags = 0;
    std::uint64_t capacity = 0;       ///< numSectors
    std::uint64_t grain_sectors = 0;  ///< power of two (1 by default)
    std::uint64_t gd_offset = 0;
    std::uint64_t gd_entries = 0;     ///< numGDEntries as recorded (≥ what the capacity needs)
    std::uint64_t free_sector = 0;
    /// Legacy (ESX 2) redo logs name their parent here when kFlagRoot is clear; current
    /// delta disks leave it empty and name the parent in their descriptor.
    std::string parent_file_name;
    std::uint32_t generation = 0;
    bool unclean_shutdown = false;

    /// Directory entries the capacity needs (the ones that are read).
    [[nodiscard]] std::uint64_t needed_gd_entries() const;
};

/// Reads and validates the COWD header of `file`. Throws Error(Corrupt) for a bad magic,
/// a zero capacity, a grain size that is not a power of two, a directory that is too small
/// for the capacity, overlaps the header or lies outside the file; Error(Unsupported) for
/// versions other than 1.
[[nodiscard]] VmdkCowdHeader read_vmdk_cowd_header(const HostFile& file);

/// A COWD extent: 32-bit grain directory → tables of 4096 32-bit entries → grains
/// (0 = unallocated, else the grain's sector). The grain directory is loaded at open.
class VmdkCowdExtent final : public VmdkGrainExtent {
public:
    /// Takes the file and its header; loads the grain directory (Error(Corrupt/Io)).
    VmdkCowdExtent(HostFile file, const VmdkCowdHeader& header);

    [[nodiscard]] std::string kind() const override { return "cowd"; }
    [[nodiscard]] const VmdkCowdHeader& header() const noexcept { return header_; }

protected:
    [[nodiscard]] std::shared_ptr<const VmdkGrainTable> load_table(std::uint64_t table) const override;

private:
    VmdkCowdHeader header_;
    std::vector<std::uint32_t> directory_;
};

}  // namespace guestfrag
