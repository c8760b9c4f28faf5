// SPDX-License-Identifier: GPL-2.0-or-later
// The VHDX block allocation table: payload block entries interleaved with sector bitmap
// entries, decoded and checked against the file once at open.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
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

/// Reads exactly out.size() bytes at `offset` within the BAT region.
using BatReader = std::function<void(std::uint64_t offset, std::span<std::byte> out)>;

/// The decoded BAT: per payload block its state and file offset, per chunk the file offset
/// of its sector bitmap block (differencing disks only). Memory: 16 bytes per run of stored
/// blocks at consecutive file offsets, 16 per sector bitmap, and in a differencing disk 16
/// per run of ZERO blocks; NOT_PRESENT, UNDEFINED and UNMAPPED blocks, and ZERO ones of a
/// disk without a parent (where all of them read as zeros), cost nothing. So a huge empty
/// disk costs what it stores, and no BAT more than 8 bytes per block and 16 per MiB of the
/// file. While it is built, the overlap check holds 32 bytes per stored block.
class Bat {
public:
    /// Reads the Metadata::bat_entries() little-endian entries through `read`, in slices,
    /// and validates every entry: known state, stored blocks at or after 1 MiB and inside
    /// `file_size`, no stored block or sector bitmap overlapping another or one of
    /// `reserved`, a sector bitmap for every chunk with partially present blocks. Throws
    /// Error(Corrupt) naming the entry, and what `read` throws.
    Bat(const BatReader& read, const Metadata& metadata, std::uint64_t file_size,
        const std::vector<FileExtent>& reserved);

    /// NotPresent also for UNDEFINED and UNMAPPED blocks, which read alike, and for ZERO
    /// blocks of a disk without a parent.
    [[nodiscard]] BlockState state(std::uint64_t block) const;
    /// File offset of a stored (fully or partially present) block; 0 for other blocks.
    [[nodiscard]] std::uint64_t offset(std::uint64_t block) const;
    /// End (exclusive) of the run of blocks from `block` on that share its state, and,
    /// stored, follow each other in the file. For a NOT_PRESENT block: the next block that
    /// is not NOT_PRESENT, blocks() when none is.
    [[nodiscard]] std::uint64_t run_end(std::uint64_t block) const;
    /// File offset of the sector bitmap block of `chunk`, 0 when it has none.
    [[nodiscard]] std::uint64_t bitmap_offset(std::uint64_t chunk) const;
    [[nodiscard]] std::uint64_t blocks() const { return blocks_; }

private:
    /// `count` blocks from `first` in one state, stored ones following each other in the
    /// file. 32-bit block numbers: a disk has at most 64 TiB / 1 MiB = 2^26 blocks.
    struct Run {
        std::uint32_t first = 0;
        std::uint32_t count = 0;
        /// As in the BAT: the state in the low 3 bits, the file offset of `first` (stored
        /// blocks; else 0) above them.
        std::uint64_t entry = 0;
        [[nodiscard]] BlockState state() const { return static_cast<BlockState>(entry & 7); }
        [[nodiscard]] std::uint64_t offset() const { return entry & ~std::uint64_t{7}; }
    };
    /// The first run that starts after `block`.
    [[nodiscard]] std::vector<Run>::const_iterator after(std::uint64_t block) const;
    /// The run holding `block`, nullptr when it is NOT_PRESENT.
    [[nodiscard]] const Run* find(std::uint64_t block) const;
    /// Appends `block`, extending the last run when it continues it.
    void add(std::uint64_t block, BlockState state, std::uint64_t offset);

    std::uint64_t blocks_ = 0;
    std::uint64_t block_size_ = 0;
    std::vector<Run> runs_;  ///< by first block; gaps are NOT_PRESENT
    /// (chunk, file offset) of the sector bitmaps that are present, by chunk.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> bitmaps_;
};

}  // namespace guestfrag::vhdx
