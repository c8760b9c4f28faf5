// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/impact/content_map.hpp"

#include <algorithm>
#include <utility>

namespace guestfrag {

namespace {

using Bytes = ByteSet::interval_type;

/// Adds the union of `ranges` ([lo, hi) each; sorted here) to the empty set `out`. In disk
/// order each is appended at the set's end, joined with what it touches or overlaps there
/// (as bitmap_difference does with the runlists).
void union_of(std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, ByteSet& out) {
    std::ranges::sort(ranges);
    for (const auto& [lo, hi] : ranges) out.add(out.end(), Bytes::right_open(lo, hi));
}

}  // namespace

ContentMap::ContentMap(const VolumeMap& volume, const Plan& plan) {
    const std::uint64_t cs = volume.cluster_size;
    const auto offset_of = [&](std::int64_t lcn) { return volume.partition_offset + static_cast<std::uint64_t>(lcn) * cs; };
    // The unions of what the moves read and wrote are built at the end, from their ranges
    // sorted: a move at a time into an interval set, in the plan's order, which jumps across
    // the disk, cost a tree lookup (a cache miss a level) for every move.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // [lo, hi)
    ranges.reserve(plan.moves.size());
    for (const Move& m : plan.moves) {
        const std::uint64_t length = static_cast<std::uint64_t>(m.clusters) * cs;
        const std::uint64_t from = offset_of(m.from_lcn);
        const std::uint64_t to = offset_of(m.to_lcn);
        if (length == 0) continue;
        std::vector<Piece> content = resolve(from, length);
        for (const Piece& p : content) ranges.emplace_back(p.source, p.source + p.length);
        split_at(to);
        split_at(to + length);
        pieces_.erase(pieces_.lower_bound(to), pieces_.lower_bound(to + length));
        for (const Piece& p : content) {
            const std::uint64_t at = to + (p.disk - from);
            // A piece that would map onto itself is no override at all.
            if (at != p.source) pieces_.emplace(at, Span{at + p.length, p.source});
        }
    }
    union_of(ranges, read_);
    ranges.clear();
    for (const Move& m : plan.moves) {
        const std::uint64_t to = offset_of(m.to_lcn);
        if (m.clusters > 0) ranges.emplace_back(to, to + static_cast<std::uint64_t>(m.clusters) * cs);
    }
    union_of(ranges, written_);
}

void ContentMap::split_at(std::uint64_t at) {
    auto it = pieces_.upper_bound(at);
    if (it == pieces_.begin()) return;
    --it;
    if (it->first < at && at < it->second.end) {
        const Span right{it->second.end, it->second.source + (at - it->first)};
        it->second.end = at;
        pieces_.emplace_hint(std::next(it), at, right);
    }
}

std::vector<ContentMap::Piece> ContentMap::resolve(std::uint64_t offset, std::uint64_t length) {
    // Where the current content of [offset, offset + length) comes from: overridden pieces
    // point elsewhere, the gaps between them are still the before-content in place.
    std::vector<Piece> out;
    std::uint64_t at = offset;
    for (const Piece& p : overrides(offset, length)) {
        if (p.disk > at) out.push_back({at, p.disk - at, at});
        out.push_back(p);
        at = p.disk + p.length;
    }
    if (at < offset + length) out.push_back({at, offset + length - at, at});
    return out;
}

std::vector<ContentMap::Piece> ContentMap::overrides(std::uint64_t offset, std::uint64_t length) const {
    std::vector<Piece> out;
    const std::uint64_t end = offset + length;
    auto it = pieces_.upper_bound(offset);
    if (it != pieces_.begin()) --it;
    for (; it != pieces_.end() && it->first < end; ++it) {
        const std::uint64_t lo = std::max(it->first, offset);
        const std::uint64_t hi = std::min(it->second.end, end);
        if (lo < hi) out.push_back({lo, hi - lo, it->second.source + (lo - it->first)});
    }
    return out;
}

}  // namespace guestfrag
