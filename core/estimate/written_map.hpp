// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

#include <boost/icl/interval_set.hpp>

#include "core/estimate/io.hpp"
#include "core/image/disk_image.hpp"

namespace guestfrag {

/// Which zeroing blocks of the virtual disk the storage has already written (docs/estimate.md
/// §5): block k covers bytes [k · block_bytes, (k + 1) · block_bytes). A write that touches a
/// block not in the map is that block's first write; the block is written from then on.
/// Memory is proportional to the number of written runs, not to the disk size.
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
    [[nodiscard]] std::uint64_t written_blocks() const { return boost::icl::length(blocks_); }
    [[nodiscard]] bool written(std::uint64_t block) const { return boost::icl::contains(blocks_, block); }

    /// Replays one IO: a read changes nothing and returns 0; a write returns how many of
    /// the blocks it touches were never written, and marks them all written.
    /// Cost: O(log runs + runs the IO overlaps).
    std::uint64_t replay(const Io& io);

    /// Bytes of `io`'s range that lie in blocks already in the map (the rest lands in blocks
    /// it would write for the first time); reads count as writes would. Does not change the
    /// map. Cost: O(log runs + runs the IO overlaps).
    [[nodiscard]] std::uint64_t bytes_in_written(const Io& io) const;

private:
    std::uint64_t block_;
    boost::icl::interval_set<std::uint64_t> blocks_;
};

}  // namespace guestfrag
