// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/image/host_file.hpp"
#include "core/image/vmdk_grain_extent.hpp"

namespace guestfrag {

/// The validated constant header of a seSparse ("-sesparse.vmdk") extent, and the
/// volatile header it points to. Offsets and sizes in sectors.
struct VmdkSeSparseHeader {
    static constexpr std::uint64_t kConstMagic = 0x00000000cafebabeull;
    static constexpr std::uint64_t kVolatileMagic = 0x00000000cafecafeull;
    static constexpr std::uint64_t kVersion = 0x0000000200000001ull;  ///< 2.1, the only one in use
    static constexpr std::uint64_t kGrainSectors = 8;                 ///< 4 KiB grains
    static constexpr std::uint64_t kGrainTableSectors = 64;           ///< 4096 64-bit entries
    static constexpr std::uint64_t kGtesPerGt = kGrainTableSectors * 512 / 8;

    std::uint64_t capacity = 0;
    std::uint64_t volatile_header_offset = 0;
    std::uint64_t journal_header_offset = 0;
    std::uint64_t journal_header_size = 0;
    std::uint64_t journal_offset = 0;
    std::uint64_t journal_size = 0;
    std::uint64_t grain_dir_offset = 0;
    std::uint64_t grain_dir_size = 0;
    std::uint64_t grain_tables_offset = 0;
    std::uint64_t grain_tables_size = 0;
    std::uint64_t free_bitmap_offset = 0;
    std::uint64_t free_bitmap_size = 0;
    std::uint64_t backmap_offset = 0;
    std::uint64_t backmap_size = 0;
    std::uint64_t grains_offset = 0;
    std::uint64_t grains_size = 0;

    /// Directory entries the capacity needs (the ones that are read).
    [[nodiscard]] std::uint64_t needed_gd_entries() const;
};

/// Reads and validates both headers of `file`. Throws Error(Corrupt) for bad magics, a
/// zero capacity, a directory too small for the capacity or outside the file;
/// Error(Unsupported) for other versions, grain or table sizes, flags, reserved fields,
/// sizes beyond 64 TiB, and a journal that still has to be replayed.
[[nodiscard]] VmdkSeSparseHeader read_vmdk_sesparse_header(const HostFile& file);

/// A seSparse extent: 64-bit grain directory entries (0 = no table, 0x1000000 in the top
/// 32 bits = table index in the low 32) → tables of 4096 64-bit entries whose top nibble
/// says 0 unallocated, 1 unmapped (reads zero), 2 zero, 3 allocated with a grain index
/// stored as bits 48–59 (its low 12 bits) and 0–47 (the rest). The directory is loaded at
/// open.
class VmdkSeSparseExtent final : public VmdkGrainExtent {
public:
    /// Takes the file and its header; loads the grain directory (Error(Corrupt/Io)).
    VmdkSeSparseExtent(HostFile file, const VmdkSeSparseHeader& header);

    [[nodiscard]] std::string kind() const override { return "sesparse"; }
    [[nodiscard]] const VmdkSeSparseHeader& header() const noexcept { return header_; }

protected:
    [[nodiscard]] std::shared_ptr<const VmdkGrainTable> load_table(std::uint64_t table) const override;

private:
    VmdkSeSparseHeader header_;
    std::vector<std::uint64_t> directory_;
};

}  // namespace guestfrag
