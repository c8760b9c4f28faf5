// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <absl/container/btree_map.h>

#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// The disk as a plan would leave it, described without writing anything: which ranges of
/// the after-disk hold content copied from elsewhere, and from which offset of the
/// before-disk. A move copies its source's *current* content, which an earlier move may
/// have put there, so sources are resolved through the moves before them. Everything not
/// overridden keeps its before-content (freed sources keep their stale data, as on a real
/// volume until something overwrites it).
class ContentMap {
public:
    /// Bytes [disk, disk + length) of the after-disk hold before-disk bytes
    /// [source, source + length).
    struct Piece {
        std::uint64_t disk = 0;
        std::uint64_t length = 0;
        std::uint64_t source = 0;

        friend bool operator==(const Piece&, const Piece&) = default;
    };

    /// Replays `plan`'s moves (already validated, e.g. by apply_plan) on `volume`'s disk
    /// offsets. O(moves · log moves) plus the pieces each move splits.
    ContentMap(const VolumeMap& volume, const Plan& plan);

    /// The overridden pieces inside [offset, offset + length), clipped to it, in disk order.
    [[nodiscard]] std::vector<Piece> overrides(std::uint64_t offset, std::uint64_t length) const;
    /// Every byte a move wrote (the union of destinations).
    [[nodiscard]] const ByteSet& written() const { return written_; }
    /// Every byte a move copied from, as before-disk offsets of the data that moved.
    [[nodiscard]] const ByteSet& read() const { return read_; }

private:
    struct Span {
        std::uint64_t end = 0;
        std::uint64_t source = 0;
    };
    /// The current content of [offset, offset + length), as pieces of the before-disk.
    void resolve(std::uint64_t offset, std::uint64_t length, std::vector<Piece>& out) const;
    /// Makes [to, to + length) hold `content`, the resolved content of [from, from + length).
    void overwrite(std::uint64_t to, std::uint64_t length, std::uint64_t from, std::span<const Piece> content);
    template <typename Visit>
    void for_each_override(std::uint64_t offset, std::uint64_t length, Visit&& visit) const {
        const std::uint64_t end = offset + length;
        auto it = pieces_.upper_bound(offset);
        if (it != pieces_.begin()) --it;
        for (; it != pieces_.end() && it->first < end; ++it) {
            const std::uint64_t lo = std::max(it->first, offset);
            const std::uint64_t hi = std::min(it->second.end, end);
            if (lo < hi) visit(Piece{lo, hi - lo, it->second.source + (lo - it->first)});
        }
    }

    /// Keyed by disk offset; non-overlapping. A B-tree: a move looks up and edits it, in the
    /// plan's order, which jumps across the disk, and a std::map of a million nodes costs a
    /// cache miss a level.
    absl::btree_map<std::uint64_t, Span> pieces_;
    ByteSet written_;
    ByteSet read_;
};

}  // namespace guestfrag
