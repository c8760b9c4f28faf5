// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
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
    void split_at(std::uint64_t at);
    [[nodiscard]] std::vector<Piece> resolve(std::uint64_t offset, std::uint64_t length);

    /// Keyed by disk offset; non-overlapping. A B-tree: a move looks up and edits it, in the
    /// plan's order, which jumps across the disk, and a std::map of a million nodes costs a
    /// cache miss a level.
    absl::btree_map<std::uint64_t, Span> pieces_;
    ByteSet written_;
    ByteSet read_;
};

}  // namespace guestfrag
