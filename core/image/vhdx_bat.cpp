// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vhdx_bat.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace guestfrag::vhdx {
namespace {

constexpr std::uint64_t kOffsetMask = ~((std::uint64_t{1} << 20) - 1);  // FileOffsetMB, bits 20-63

/// A stored block or bitmap, for the overlap check; the name is made only for messages.
struct Used {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::int64_t what = 0;  ///< >= 0: payload block; < -1: bitmap of chunk -what-2; -1: reserved
    std::size_t reserved = 0;
};

std::string entry_name(std::uint64_t index, std::uint64_t block) {
    return "BAT entry " + std::to_string(index) + " (block " + std::to_string(block) + ")";
}

}  // namespace

Bat::Bat(std::span<const std::byte> raw, const Metadata& metadata, std::uint64_t file_size,
         const std::vector<FileExtent>& reserved) {
    const std::uint64_t blocks = metadata.data_blocks();
    const std::uint64_t ratio = metadata.chunk_ratio();
    const std::uint64_t chunks = metadata.bitmap_blocks();
    const std::uint64_t total = raw.size() / 8;
    const auto entry = [&](std::uint64_t index) { return load_le(raw.data() + index * 8, 8); };
    const auto corrupt = [](const std::string& what) { throw Error(ErrorKind::Corrupt, "vhdx: " + what); };
    const auto past_end = [&](std::uint64_t start, std::uint64_t length) {
        return start > file_size || length > file_size - start;
    };

    std::vector<Used> used;
    for (std::size_t i = 0; i < reserved.size(); ++i)
        if (reserved[i].length != 0)
            used.push_back({reserved[i].start, reserved[i].start + reserved[i].length, -1, i});

    // Sector bitmaps first: partially present blocks need them. A disk without a parent
    // has no use for them (the spec keeps them NOT_PRESENT there), so they are ignored.
    if (metadata.has_parent) {
        bitmaps_.assign(chunks, 0);
        for (std::uint64_t chunk = 0; chunk < chunks; ++chunk) {
            const std::uint64_t index = chunk * (ratio + 1) + ratio;
            if (index >= total) break;
            const std::uint64_t e = entry(index);
            const unsigned state = static_cast<unsigned>(e & 7);
            const std::string name = "BAT entry " + std::to_string(index) + " (sector bitmap of chunk " +
                                     std::to_string(chunk) + ")";
            if (state == 0) continue;
            if (state != 6) corrupt(name + " has the invalid state " + std::to_string(state));
            const std::uint64_t offset = e & kOffsetMask;
            if (offset < MiB) corrupt(name + " points into the file header (offset " + std::to_string(offset) + ")");
            if (past_end(offset, kSectorBitmapBytes))
                corrupt(name + " at offset " + std::to_string(offset) + " points past the end of the file (" +
                        std::to_string(file_size) + " bytes)");
            bitmaps_[chunk] = offset;
            used.push_back({offset, offset + kSectorBitmapBytes, -static_cast<std::int64_t>(chunk) - 2, 0});
        }
    }

    states_.resize(blocks);
    offsets_.resize(blocks);
    for (std::uint64_t block = 0; block < blocks; ++block) {
        const std::uint64_t index = block + block / ratio;
        const std::uint64_t e = entry(index);
        const unsigned state = static_cast<unsigned>(e & 7);
        switch (state) {
            case 0:
            case 1:
            case 2:
            case 3: states_[block] = static_cast<BlockState>(state); continue;
            case 6: break;
            case 7:
                if (!metadata.has_parent)
                    corrupt(entry_name(index, block) + " is partially present in a disk without a parent");
                if (bitmaps_[block / ratio] == 0)
                    corrupt(entry_name(index, block) + " is partially present but chunk " +
                            std::to_string(block / ratio) + " has no sector bitmap");
                break;
            default: corrupt(entry_name(index, block) + " has the invalid state " + std::to_string(state));
        }
        const std::uint64_t offset = e & kOffsetMask;
        // Only the part of the last block that the virtual size uses must exist.
        const std::uint64_t needed = std::min<std::uint64_t>(metadata.block_size,
                                                             metadata.virtual_size - block * metadata.block_size);
        if (offset < MiB) corrupt(entry_name(index, block) + " points into the file header (offset " +
                                  std::to_string(offset) + ")");
        if (past_end(offset, needed))
            corrupt(entry_name(index, block) + " at offset " + std::to_string(offset) +
                    " points past the end of the file (" + std::to_string(file_size) + " bytes)");
        states_[block] = static_cast<BlockState>(state);
        offsets_[block] = offset;
        used.push_back({offset, offset + needed, static_cast<std::int64_t>(block), 0});
    }

    // No two stored things may share file bytes (the spec forbids it; a crafted file could
    // otherwise alias the BAT or another block).
    // Reserved areas sort first among equal starts, so messages name the block, not them.
    std::sort(used.begin(), used.end(), [](const Used& a, const Used& b) {
        return a.start != b.start ? a.start < b.start : (a.what == -1) > (b.what == -1);
    });
    const auto name = [&](const Used& u) {
        if (u.what == -1) return reserved[u.reserved].name;
        if (u.what < -1) return "the sector bitmap of chunk " + std::to_string(-u.what - 2);
        const auto block = static_cast<std::uint64_t>(u.what);
        return entry_name(block + block / ratio, block);
    };
    const Used* widest = nullptr;
    for (const Used& u : used) {
        if (widest != nullptr && u.start < widest->end) corrupt(name(u) + " overlaps " + name(*widest));
        if (widest == nullptr || u.end > widest->end) widest = &u;
    }
}

}  // namespace guestfrag::vhdx
