// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vhdx_bat.hpp"

#include <algorithm>
#include <iterator>

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

Bat::Bat(const BatReader& read, const Metadata& metadata, std::uint64_t file_size,
         const std::vector<FileExtent>& reserved)
    : blocks_(metadata.data_blocks()), block_size_(metadata.block_size) {
    const std::uint64_t blocks = blocks_;
    const std::uint64_t ratio = metadata.chunk_ratio();
    const std::uint64_t chunks = metadata.bitmap_blocks();
    const std::uint64_t total = metadata.bat_entries();
    const auto corrupt = [](const std::string& what) { throw Error(ErrorKind::Corrupt, "vhdx: " + what); };
    const auto past_end = [&](std::uint64_t start, std::uint64_t length) {
        return start > file_size || length > file_size - start;
    };
    // Entries are read in slices rather than all at once, so that a huge BAT of
    // NOT_PRESENT entries (a huge empty disk) costs neither a copy of itself nor its entries.
    constexpr std::uint64_t kSliceEntries = 8192;  // 64 KiB
    std::vector<std::byte> slice;
    std::uint64_t slice_first = 0;  // entry index of slice[0]
    const auto entry = [&](std::uint64_t index) {
        if (index < slice_first || index - slice_first >= slice.size() / 8) {
            slice.resize(static_cast<std::size_t>(std::min(kSliceEntries, total - index) * 8));
            read(index * 8, slice);
            slice_first = index;
        }
        return load_le(slice.data() + (index - slice_first) * 8, 8);
    };

    std::vector<Used> used;
    for (std::size_t i = 0; i < reserved.size(); ++i)
        if (reserved[i].length != 0)
            used.push_back({reserved[i].start, reserved[i].start + reserved[i].length, -1, i});

    // Sector bitmaps first: partially present blocks need them. A disk without a parent
    // has no use for them (the spec keeps them NOT_PRESENT there), so they are ignored.
    // They are read one by one: a disk has at most 64 TiB / 4 GiB = 16,384 chunks.
    if (metadata.has_parent) {
        for (std::uint64_t chunk = 0; chunk < chunks; ++chunk) {
            const std::uint64_t index = chunk * (ratio + 1) + ratio;
            if (index >= total) break;
            std::byte raw[8]{};
            read(index * 8, raw);
            const std::uint64_t e = load_le(raw, 8);
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
            bitmaps_.emplace_back(chunk, offset);
            used.push_back({offset, offset + kSectorBitmapBytes, -static_cast<std::int64_t>(chunk) - 2, 0});
        }
    }

    std::uint64_t stored = 0;
    for (std::uint64_t block = 0; block < blocks; ++block) {
        const std::uint64_t index = block + block / ratio;
        const std::uint64_t e = entry(index);
        const unsigned state = static_cast<unsigned>(e & 7);
        switch (state) {
            // UNDEFINED and UNMAPPED blocks read as NOT_PRESENT ones do (the parent's bytes,
            // or zeros) and are kept as such: apart, a BAT alternating them with ZERO would
            // cost a run per block. Without a parent ZERO reads so too, and is kept so.
            case 0:
            case 1:
            case 3:
                continue;
            case 2:
                if (metadata.has_parent) add(block, BlockState::Zero, 0);
                continue;
            case 6: break;
            case 7:
                if (!metadata.has_parent)
                    corrupt(entry_name(index, block) + " is partially present in a disk without a parent");
                if (bitmap_offset(block / ratio) == 0)
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
        // Stored blocks that do not overlap start on distinct MiB boundaries inside the file:
        // past that many, the check below refuses it, and runs for them would only add to
        // what it holds.
        if (++stored <= file_size / MiB) add(block, static_cast<BlockState>(state), offset);
        used.push_back({offset, offset + needed, static_cast<std::int64_t>(block), 0});
    }
    runs_.shrink_to_fit();

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

void Bat::add(std::uint64_t block, BlockState state, std::uint64_t offset) {
    if (!runs_.empty()) {
        Run& last = runs_.back();
        if (last.state() == state && last.first + last.count == block &&
            (offset == 0 || last.offset() + last.count * block_size_ == offset)) {
            ++last.count;
            return;
        }
    }
    runs_.push_back({static_cast<std::uint32_t>(block), 1, offset | static_cast<std::uint64_t>(state)});
}

std::vector<Bat::Run>::const_iterator Bat::after(std::uint64_t block) const {
    return std::upper_bound(runs_.begin(), runs_.end(), block,
                            [](std::uint64_t b, const Run& run) { return b < run.first; });
}

const Bat::Run* Bat::find(std::uint64_t block) const {
    const auto it = after(block);
    if (it == runs_.begin()) return nullptr;
    const Run& run = *std::prev(it);
    return block - run.first < run.count ? &run : nullptr;
}

BlockState Bat::state(std::uint64_t block) const {
    const Run* run = find(block);
    return run != nullptr ? run->state() : BlockState::NotPresent;
}

std::uint64_t Bat::offset(std::uint64_t block) const {
    const Run* run = find(block);
    return run != nullptr && run->offset() != 0 ? run->offset() + (block - run->first) * block_size_ : 0;
}

std::uint64_t Bat::run_end(std::uint64_t block) const {
    if (const Run* run = find(block)) return run->first + run->count;
    const auto next = after(block);
    return next != runs_.end() ? next->first : blocks_;
}

std::uint64_t Bat::bitmap_offset(std::uint64_t chunk) const {
    const auto it =
        std::lower_bound(bitmaps_.begin(), bitmaps_.end(), std::make_pair(chunk, std::uint64_t{0}));
    return it != bitmaps_.end() && it->first == chunk ? it->second : 0;
}

}  // namespace guestfrag::vhdx
