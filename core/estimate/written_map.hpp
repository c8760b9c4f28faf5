// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <unordered_map>

#include <boost/icl/interval_set.hpp>

#include "core/estimate/io.hpp"
#include "core/image/disk_image.hpp"

namespace guestfrag {

/// Which zeroing blocks of the virtual disk the storage has already written (docs/estimate.md
/// §5): block k covers bytes [k · block_bytes, (k + 1) · block_bytes). A write that touches a
/// block not in the map is that block's first write; the block is written from then on.
/// The layer's blocks, and those of writes of 64 blocks or more, are held as runs; the
/// blocks of shorter writes as 64-block words in a hash table: a million random 4 KiB
/// first writes cost a hash lookup each, not an insertion into a tree of a million runs,
/// while long sequential writes stay one run. Memory is proportional to the runs plus the
/// words short writes touched, not to the disk size.
class WrittenMap {
public:
    /// A map with nothing written, in blocks of `block_bytes` (> 0; 0 is taken as 512).
    explicit WrittenMap(std::uint64_t block_bytes);

    /// The blocks `layer` stores data in (any byte of the block): what the storage under
    /// the layer has allocated and written. Zero ranges (declared zero, nothing stored) are
    /// not written. Cost: O(allocated runs).
    [[nodiscard]] static WrittenMap from_layer(const Layer& layer, std::uint64_t block_bytes);

    [[nodiscard]] std::uint64_t block_bytes() const noexcept { return block_; }
    /// Blocks in the map.
    [[nodiscard]] std::uint64_t written_blocks() const { return boost::icl::length(blocks_) + added_blocks_; }
    [[nodiscard]] bool written(std::uint64_t block) const {
        return boost::icl::contains(blocks_, block) || added(block);
    }

    /// Replays one IO: a read changes nothing and returns 0; a write returns how many of
    /// the blocks it touches were never written, and marks them all written.
    /// Cost: O(log runs + runs the IO overlaps + blocks it touches).
    std::uint64_t replay(const Io& io);

    /// Bytes of `io`'s range that lie in blocks already in the map (the rest lands in blocks
    /// it would write for the first time); reads count as writes would. Does not change the
    /// map. Cost: O(log runs + runs the IO overlaps + blocks it touches).
    [[nodiscard]] std::uint64_t bytes_in_written(const Io& io) const;

private:
    [[nodiscard]] bool added(std::uint64_t block) const;
    /// Calls f(first, last) for each run of blocks in [first, last] that blocks_ lacks.
    template <typename F>
    void each_gap(std::uint64_t first, std::uint64_t last, F&& f) const;
    /// Calls f(word, mask) for each word of added_ that blocks [lo, hi] fall in, with the
    /// mask of their bits.
    template <typename F>
    static void each_word(std::uint64_t lo, std::uint64_t hi, F&& f);
    /// Blocks of [lo, hi] in added_.
    [[nodiscard]] std::uint64_t count_added(std::uint64_t lo, std::uint64_t hi) const;

    std::uint64_t block_;
    boost::icl::interval_set<std::uint64_t> blocks_;            ///< the layer's
    std::unordered_map<std::uint64_t, std::uint64_t> added_;  ///< block / 64 → bits of blocks written since
    std::uint64_t added_blocks_ = 0;
};

}  // namespace guestfrag
