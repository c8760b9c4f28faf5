// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/impact/content_map.hpp"

#include <algorithm>
#include <utility>

#include "core/plan/intervals.hpp"

namespace guestfrag {

namespace {

using Bytes = ByteSet::interval_type;

/// Adds the union of `ranges` to the empty set `out`: each interval appended at its end
/// once, with nothing there to join.
void union_of(PendingRanges<std::uint64_t>& ranges, ByteSet& out) {
    ranges.give_to(
        [&](std::uint64_t lo, std::uint64_t hi) { out.insert(out.end(), Bytes::right_open(lo, hi)); });
}

}  // namespace

ContentMap::ContentMap(const VolumeMap& volume, const Plan& plan) {
    const std::uint64_t cs = volume.cluster_size;
    const auto offset_of = [&](std::int64_t lcn) { return volume.partition_offset + static_cast<std::uint64_t>(lcn) * cs; };
    // The unions of what the moves read and wrote are built at the end, from their ranges
    // sorted: a move at a time into an interval set, in the plan's order, which jumps across
    // the disk, cost a tree lookup (a cache miss a level) for every move.
    PendingRanges<std::uint64_t> ranges;
    std::vector<Piece> content;  // reused: a move's source, resolved
    for (const Move& m : plan.moves) {
        const std::uint64_t length = static_cast<std::uint64_t>(m.clusters) * cs;
        const std::uint64_t from = offset_of(m.from_lcn);
        if (length == 0) continue;
        resolve(from, length, content);
        for (const Piece& p : content) ranges.add(p.source, p.source + p.length);
        overwrite(offset_of(m.to_lcn), length, from, content);
    }
    union_of(ranges, read_);
    for (const Move& m : plan.moves) {
        const std::uint64_t to = offset_of(m.to_lcn);
        if (m.clusters > 0) ranges.add(to, to + static_cast<std::uint64_t>(m.clusters) * cs);
    }
    union_of(ranges, written_);
}

void ContentMap::overwrite(std::uint64_t to, std::uint64_t length, std::uint64_t from, std::span<const Piece> content) {
    // One descent a move, not one for each end's split and each bound: at ten million
    // pieces the tree is far larger than the cache and a descent costs a miss a level.
    const std::uint64_t end = to + length;
    auto it = pieces_.lower_bound(to);
    if (it != pieces_.begin()) {
        auto before = std::prev(it);
        if (before->second.end > to) {  // starts before `to` and reaches into it: keep its head
            const std::uint64_t was_end = std::exchange(before->second.end, to);
            if (was_end > end) {
                const std::uint64_t source = before->second.source + (end - before->first);
                it = pieces_.emplace_hint(it, end, Span{was_end, source});
            }
        }
    }
    while (it != pieces_.end() && it->first < end) {
        const auto [start, span] = *it;
        it = pieces_.erase(it);
        if (span.end > end) {  // reaches past `end`: keep its tail
            it = pieces_.emplace_hint(it, end, Span{span.end, span.source + (end - start)});
            break;
        }
    }
    // `it` is the first piece at or after `end`; the new pieces go before it, in order.
    for (const Piece& p : content) {
        const std::uint64_t at = to + (p.disk - from);
        // A piece that would map onto itself is no override at all.
        if (at != p.source) it = std::next(pieces_.emplace_hint(it, at, Span{at + p.length, p.source}));
    }
}

void ContentMap::resolve(std::uint64_t offset, std::uint64_t length, std::vector<Piece>& out) const {
    // Where the current content of [offset, offset + length) comes from: overridden pieces
    // point elsewhere, the gaps between them are still the before-content in place.
    out.clear();
    std::uint64_t at = offset;
    for_each_override(offset, length, [&](const Piece& p) {
        if (p.disk > at) out.push_back({at, p.disk - at, at});
        out.push_back(p);
        at = p.disk + p.length;
    });
    if (at < offset + length) out.push_back({at, offset + length - at, at});
}

std::vector<ContentMap::Piece> ContentMap::overrides(std::uint64_t offset, std::uint64_t length) const {
    std::vector<Piece> out;
    for_each_override(offset, length, [&](const Piece& p) { out.push_back(p); });
    return out;
}

}  // namespace guestfrag
