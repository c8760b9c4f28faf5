// SPDX-License-Identifier: GPL-2.0-or-later
// The VHDX block allocation table: payload block entries interleaved with sector bitmap
// entries, decoded and checked against the file once at open.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/image/vhdx_format.hpp"

namespace guestfrag::vhdx {

/// Payload block states (the low 3 bits of a BAT entry).
enum class BlockState : std::uint8_t {
    NotPresent = 0,
    Undefined = 1,
    Zero = 2,
    Unmapped = 3,
    FullyPresent = 6,
    PartiallyPresent = 7,  ///< differencing only: the chunk's sector bitmap says which sectors
};

/// A byte range of the file that payload and bitmap blocks must not overlap.
struct FileExtent {
    std::uint64_t start = 0;
    std::uint64_t length = 0;
    std::string name;  ///< for messages ("the BAT region", "the log", ...)
};

/// The decoded BAT: per payload block its state and file offset, per chunk the file offset
/// of its sector bitmap block (differencing disks only). Memory: 9 bytes per payload block.
class Bat {
public:
    /// Decodes `raw` (Metadata::bat_entries() little-endian entries) and validates every
    /// entry: known state, stored blocks at or after 1 MiB and inside `file_size`, no stored
    /// block or sector bitmap overlapping another or one of `reserved`, a sector bitmap for
    /// every chunk with partially present blocks. Throws Error(Corrupt) naming the entry.
    Bat(std::span<const std::byte> raw, const Metadata& metadata, std::uint64_t file_size,
        const std::vector<FileExtent>& reserved);

    [[nodiscard]] BlockState state(std::uint64_t block) const { return states_[block]; }
    /// File offset of a stored (fully or partially present) block.
    [[nodiscard]] std::uint64_t offset(std::uint64_t block) const { return offsets_[block]; }
    /// File offset of the sector bitmap block of `chunk`, 0 when it has none.
    [[nodiscard]] std::uint64_t bitmap_offset(std::uint64_t chunk) const {
        return chunk < bitmaps_.size() ? bitmaps_[chunk] : 0;
    }
    [[nodiscard]] std::uint64_t blocks() const { return states_.size(); }

private:
    std::vector<BlockState> states_;
    std::vector<std::uint64_t> offsets_;
    std::vector<std::uint64_t> bitmaps_;
};

}  // namespace guestfrag::vhdx
