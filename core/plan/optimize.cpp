// SPDX-License-Identifier: GPL-2.0-or-later
// Strategy "optimize": full optimization — one large free window, every other stream packed
// whole into the gaps between the streams that stay (docs/planner.md §7).
#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>

#include <absl/container/btree_set.h>

#include "core/io/heap.hpp"
#include "core/model/free_space.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/intervals.hpp"
#include "core/plan/strategy.hpp"

namespace guestfrag::planner {

namespace {

constexpr std::int64_t kStays = -1;   ///< the stream keeps its place
constexpr std::int64_t kNoRoom = -2;  ///< the stream should move but finds no place

/// A stream the plan may move. Its pieces (where it is now, VCN order) are
/// Optimizer::pieces_[first_piece, first_piece + piece_count): one array for all items, not
/// a vector (24 bytes and an allocation) each.
struct Item {
    std::uint32_t stream = 0;
    std::uint32_t piece_count = 0;
    std::uint32_t first_piece = 0;
    bool fragmented = false;
    std::int64_t clusters = 0;
};

/// Where an item lies now: [first, end) spans its pieces. Beside the items, not in them: only
/// the layout search asks, and the list goes before the moves are made.
struct Bounds {
    std::int64_t first = 0;  ///< lowest cluster it occupies
    std::int64_t end = 0;    ///< one past the highest
};

/// A piece of an item, where it lies now.
struct PlacedPiece {
    std::int64_t lcn = 0;
    std::int64_t end = 0;
    std::size_t item = 0;
};

/// One list of items per item, in two flat arrays: the wait lists of a million streams
/// without a vector (24 bytes and an allocation) each.
class ItemLists {
public:
    /// `owners` lists; the pair (o, m) puts m on list o. Each list keeps the pairs' order.
    ItemLists(std::size_t owners, std::span<const std::pair<std::uint32_t, std::uint32_t>> pairs)
        : start_(owners + 1, 0), members_(pairs.size()) {
        for (const auto& [o, m] : pairs) ++start_[o + 1];
        std::partial_sum(start_.begin(), start_.end(), start_.begin());
        std::vector<std::uint32_t> next(start_.begin(), start_.end() - 1);
        for (const auto& [o, m] : pairs) members_[next[o]++] = m;
    }

    [[nodiscard]] std::span<const std::uint32_t> operator[](std::size_t o) const {
        return std::span(members_).subspan(start_[o], start_[o + 1] - start_[o]);
    }

private:
    std::vector<std::uint32_t> start_;  ///< list o is members_[start_[o], start_[o + 1])
    std::vector<std::uint32_t> members_;
};

/// Free-space figures as the summary counts them: extents, the largest, fragmentation.
struct FreeFigures {
    double fragmentation = 0;
    std::int64_t largest = 0;
    std::int64_t extents = 0;
};

/// The figures of free clusters `extents` (any order; touching or overlapping ones are one
/// extent, as they are in $Bitmap). Sorts `extents`. O(n log n).
FreeFigures free_figures(std::vector<std::pair<std::int64_t, std::int64_t>>& extents,
                         std::uint32_t cluster_size) {
    std::ranges::sort(extents);
    FreeSpacePenalty penalty(cluster_size);
    FreeFigures f;
    for (std::size_t k = 0; k < extents.size();) {
        auto [lo, hi] = extents[k];
        for (++k; k < extents.size() && extents[k].first <= hi; ++k) hi = std::max(hi, extents[k].second);
        if (hi <= lo) continue;
        penalty.add(static_cast<std::uint64_t>(hi - lo));
        f.largest = std::max(f.largest, hi - lo);
        ++f.extents;
    }
    f.fragmentation = penalty.percent();
    return f;
}

/// Where a candidate layout leaves free space, and what it costs.
struct Layout {
    std::int64_t window_lo = 0;     ///< the window [window_lo, window_hi) ends up free
    std::int64_t window_hi = 0;
    std::vector<std::int64_t> dest;  ///< per item: destination LCN, kStays or kNoRoom
    double fragmentation = 0;
    std::int64_t largest = 0;
    std::int64_t extents = 0;   ///< free extents after
    bool keeps_promise = true;  ///< no free-space figure worse than before (set by judge)
    std::int64_t moved = 0;
    std::int64_t no_room = 0;  ///< clusters of streams that must move but find no place
    bool over_budget = false;  ///< moves more than --max-moved allows
    std::int64_t left_fragmented = 0;  ///< clusters of fragmented streams the layout leaves as they are

    /// Within --max-moved first, then free space no worse than before, then every stream
    /// placed, then fewer fragmented streams left, then lower free-space fragmentation, then
    /// a larger window, then less data moved.
    [[nodiscard]] bool better_than(const Layout& o) const {
        const auto key = [](const Layout& l) {
            return std::tuple{l.over_budget,
                              !l.keeps_promise,
                              l.no_room,
                              l.left_fragmented,
                              static_cast<std::int64_t>(l.fragmentation * 100 + 0.5),
                              -l.largest,
                              l.moved};
        };
        return key(*this) < key(o);
    }
};

class Optimizer {
public:
    explicit Optimizer(Builder& builder) : builder_(builder), volume_(builder.volume()) {
        const auto& streams = volume_.streams;
        // A bound, not a count, so the list never exists twice while it grows; a large
        // reservation is mapped fresh, and the pages no item uses are never touched.
        items_.reserve(streams.size());
        bounds_.reserve(streams.size());
        std::size_t runs = 0;  // a bound on the pieces, reserved as items_ is
        for (const Stream& s : streams) runs += s.placement == Placement::Movable ? s.extents.size() : 0;
        // Items, pieces and wait lists (at most a wait per piece and item: destinations do
        // not overlap, nor do pieces) are numbered in 4 bytes.
        require_32bit(streams.size() + runs, "streams and runs");
        pieces_.reserve(runs);
        for (std::size_t i = 0; i < streams.size(); ++i) {
            const Stream& s = streams[i];
            if (s.placement != Placement::Movable) continue;
            const std::vector<Piece> pieces = pieces_of(s);
            if (pieces.empty()) continue;
            if (const auto glob = builder.excluded_by(s)) {
                builder.skip(s, "matches --exclude " + *glob);
                continue;
            }
            Item item{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(pieces.size()),
                      static_cast<std::uint32_t>(pieces_.size()), s.fragments() > 1, 0};
            Bounds bounds{pieces.front().lcn, 0};
            for (const Piece& p : pieces) {
                bounds.first = std::min(bounds.first, p.lcn);
                bounds.end = std::max(bounds.end, p.lcn + p.clusters);
                item.clusters += p.clusters;
            }
            pieces_.insert(pieces_.end(), pieces.begin(), pieces.end());
            items_.push_back(item);
            bounds_.push_back(bounds);
        }
        if (!builder.ordered()) {
            // Largest first, then by position (unique: pieces do not overlap): the order
            // best-fit decreasing packs in. Sorted on the keys themselves, not on item numbers
            // compared through the items: at ten million items each such comparison is two
            // cache misses.
            struct Key {
                std::int64_t clusters;
                std::int64_t first;
                std::uint32_t item;
            };
            std::vector<Key> keys(items_.size());
            for (std::size_t i = 0; i < items_.size(); ++i)
                keys[i] = {items_[i].clusters, bounds_[i].first, static_cast<std::uint32_t>(i)};
            std::ranges::sort(keys, [](const Key& a, const Key& b) {
                return a.clusters != b.clusters ? a.clusters > b.clusters : a.first < b.first;
            });
            by_size_.reserve(keys.size());
            for (const Key& k : keys) by_size_.push_back(k.item);
        }
        pieces_by_lcn_.reserve(pieces_.size());
        for (std::size_t i = 0; i < items_.size(); ++i)
            for (const Piece& p : pieces(items_[i])) pieces_by_lcn_.push_back({p.lcn, p.lcn + p.clusters, i});
        std::ranges::sort(pieces_by_lcn_, {}, &PlacedPiece::lcn);
        // What nothing in this plan moves: every cluster neither free nor a movable item's,
        // the gaps of one sweep over both in LCN order (neither overlaps the other), each
        // appended at the set's end.
        std::int64_t cursor = 0;
        const auto covered = [&](std::int64_t lo, std::int64_t hi) {
            if (lo > cursor) pinned_.add(pinned_.end(), cluster_range(cursor, lo));
            cursor = std::max(cursor, hi);
        };
        auto free = volume_.free.begin();
        for (const PlacedPiece& p : pieces_by_lcn_) {
            for (; free != volume_.free.end() && first_cluster(*free) < p.lcn; ++free)
                covered(first_cluster(*free), end_cluster(*free));
            covered(p.lcn, p.end);
        }
        for (; free != volume_.free.end(); ++free) covered(first_cluster(*free), end_cluster(*free));
        if (cursor < volume_.total_clusters)
            pinned_.add(pinned_.end(), cluster_range(cursor, volume_.total_clusters));
        std::vector<std::pair<std::int64_t, std::int64_t>> free_now;
        for (const auto& f : volume_.free) free_now.emplace_back(first_cluster(f), end_cluster(f));
        before_ = free_figures(free_now, volume_.cluster_size);
        barriers_ = pinned_;
        barriers_ += volume_.mft_zone;
        zone_room_ = largest_zone_room();
        if (builder.ordered()) {
            std::vector<std::uint32_t> item_of(streams.size(), static_cast<std::uint32_t>(items_.size()));
            for (std::size_t i = 0; i < items_.size(); ++i) item_of[items_[i].stream] = static_cast<std::uint32_t>(i);
            for (const std::size_t s : builder.sequence())
                if (item_of[s] < items_.size()) in_order_.push_back(item_of[s]);
        }
    }

    void plan(const Progress& progress) {
        if (items_.empty()) return;
        Layout best = builder_.ordered() ? choose_ordered_layout(progress) : choose_layout(progress);
        // What only the layout search needed.
        bounds_ = {};
        by_size_ = {};
        in_order_ = {};
        release_freed_memory();
        // optimize's promise (docs/planner.md §12): free space no worse, and no plan for nothing.
        if (!best.keeps_promise) {
            builder_.plan().notes.push_back(
                "nothing moved: every layout tried would leave free space worse than it is (more free "
                "extents, a smaller largest one or more free-space fragmentation)");
            return;
        }
        if (!gains(best)) {
            builder_.plan().notes.push_back(
                "nothing to gain: no fragmented stream to join, and no layout leaves fewer or larger free "
                "extents or less free-space fragmentation");
            return;
        }
        carry_out(std::move(best), progress);
    }

private:
    /// Fragmentation differences below this are rounding, not a change.
    static constexpr double kSameFragmentation = 1e-9;

    /// Sets `l`'s free-space figures from the free extents it leaves (sorted here), and
    /// whether none is worse than before the plan.
    void judge(Layout& l, std::vector<std::pair<std::int64_t, std::int64_t>>& free_after) const {
        const FreeFigures f = free_figures(free_after, volume_.cluster_size);
        l.fragmentation = f.fragmentation;
        l.largest = f.largest;
        l.extents = f.extents;
        l.keeps_promise = f.extents <= before_.extents && f.largest >= before_.largest &&
                          f.fragmentation <= before_.fragmentation + kSameFragmentation;
    }

    /// Whether `l` improves anything optimize optimizes for: it joins a fragmented stream, or
    /// leaves fewer or larger free extents or less free-space fragmentation.
    [[nodiscard]] bool gains(const Layout& l) const {
        if (l.moved == 0) return false;
        for (std::size_t i = 0; i < items_.size(); ++i)
            if (items_[i].fragmented && l.dest[i] >= 0) return true;
        return l.extents < before_.extents || l.largest > before_.largest ||
               l.fragmentation < before_.fragmentation - kSameFragmentation;
    }

    /// Whether item `i` lies at `to` already, in one piece: placed there it moves nothing.
    [[nodiscard]] bool in_place(std::size_t i, std::int64_t to) const {
        return items_[i].piece_count == 1 && pieces(items_[i]).front().lcn == to;
    }

    /// Whether item `i`, in one piece, overlaps its own destination `to` and can slide there
    /// in at most kMostSlideMoves moves, each into the clusters the one before left: a slide
    /// moves each cluster once, where a detour through free room moves the stream twice.
    [[nodiscard]] bool slides(std::size_t i, std::int64_t to) const {
        if (items_[i].piece_count != 1) return false;
        const std::int64_t from = pieces(items_[i]).front().lcn;
        const std::int64_t n = items_[i].clusters;
        const std::int64_t shift = to > from ? to - from : from - to;
        return shift > 0 && shift < n && (n + shift - 1) / shift <= kMostSlideMoves;
    }

    /// Emits the slide of item `i` to `to` (slides): towards lower clusters its first part
    /// moves first, towards higher ones its last.
    void slide(std::size_t i, std::int64_t to) {
        const Stream& s = volume_.streams[items_[i].stream];
        const Piece p = pieces(items_[i]).front();
        const std::int64_t shift = to > p.lcn ? to - p.lcn : p.lcn - to;
        const auto part = [&](std::int64_t at, std::int64_t clusters) {
            builder_.move_part(s, p.vcn + at, p.lcn + at, to + at, clusters);
        };
        if (to < p.lcn) {
            for (std::int64_t at = 0; at < p.clusters; at += shift)
                part(at, std::min(shift, p.clusters - at));
        } else {
            std::int64_t end = p.clusters;
            for (; end > shift; end -= shift) part(end - shift, shift);
            part(0, end);
        }
    }

    [[nodiscard]] std::span<Piece> pieces(const Item& item) {
        return std::span(pieces_).subspan(item.first_piece, item.piece_count);
    }
    [[nodiscard]] std::span<const Piece> pieces(const Item& item) const {
        return std::span(pieces_).subspan(item.first_piece, item.piece_count);
    }

    /// The best layout over the anchor sizes, joining fragmented streams or (under a budget)
    /// not, and the split
    /// points: 16 evenly spaced splits, then 16 more around the best of them. A volume of more
    /// than kLargeVolume pieces gets 6 + 6 splits and anchor sizes 8 and 64, so that the
    /// search stays near 25 million piece visits. O(evaluations · (items · log items + pieces)).
    Layout choose_layout(const Progress& progress) {
        const bool large = pieces_by_lcn_.size() > kLargeVolume;
        const std::int64_t steps = large ? 6 : 16;
        const std::vector<std::int64_t> anchor_sizes =
            large ? std::vector<std::int64_t>{8, 64} : std::vector<std::int64_t>{1, 8, 64, 512};
        // Leaving fragmented streams as they are only pays under a --max-moved budget.
        const std::vector<bool> joins =
            builder_.options().max_moved ? std::vector<bool>{true, false} : std::vector<bool>{true};
        const std::uint64_t evaluations = 2 * static_cast<std::uint64_t>(steps) * joins.size() * anchor_sizes.size();
        std::optional<Layout> best;
        const std::int64_t n = volume_.total_clusters;
        std::uint64_t done = 0;
        const auto search = [&](std::int64_t from, std::int64_t step) {
            for (std::int64_t k = 1; k <= steps; ++k) {
                const std::int64_t split = std::clamp<std::int64_t>(from + k * step, 1, n);
                for (const bool join : joins) {
                    for (const std::int64_t anchor_min : anchor_sizes) {
                        progress.update(done++, evaluations);
                        Layout l = evaluate(anchor_min, split, join);
                        if (!best || l.better_than(*best)) best = std::move(l);
                    }
                }
            }
        };
        const std::int64_t coarse = std::max<std::int64_t>(1, n / steps);
        search(0, coarse);
        const std::int64_t fine = std::max<std::int64_t>(1, 2 * coarse / steps);
        search(best->window_hi - coarse - fine, fine);
        return std::move(*best);
    }

    /// The layout that keeps unfragmented streams of ≥ anchor_min clusters (and, unless
    /// `join_fragmented`, the fragmented ones) at or after `split` in place, frees the window [w, split)
    /// below it (w: the end of the last barrier below `split`), and packs every other stream best-fit
    /// decreasing into the gaps after `split`; what does not fit goes to the top of the MFT zone (at most
    /// half its free room) and then to the top of the window. A stream best fit puts where it is already
    /// moves nothing. The free space it predicts is the plan's when every stream moves as laid out.
    [[nodiscard]] Layout evaluate(std::int64_t anchor_min, std::int64_t split, bool join_fragmented) const {
        Layout l;
        l.window_hi = split;
        if (boost::icl::contains(barriers_, split - 1)) {
            l.window_lo = split;  // the split lies in a barrier: no window
        } else if (const auto below = clip(barriers_, cluster_range(0, split)); !below.empty()) {
            l.window_lo = end_cluster(*below.rbegin());
        }
        l.dest.assign(items_.size(), kStays);
        std::vector<char> moving(items_.size(), 0);
        for (std::size_t i = 0; i < items_.size(); ++i) {
            const Item& it = items_[i];
            const bool keeps_shape = !it.fragmented || !join_fragmented;
            const bool anchor =
                bounds_[i].first >= split && keeps_shape && (it.fragmented || it.clusters >= anchor_min);
            const bool below_window = bounds_[i].end <= l.window_lo && keeps_shape;
            moving[i] = anchor || below_window ? 0 : 1;
        }
        // Gaps after the split, by (length, start): what neither pinned clusters nor the pieces
        // of streams that stay hold. Both lists are in LCN order: one merged sweep. A B-tree, as
        // FreeIndex's: best fit is a lookup and an edit of it for every stream that moves.
        absl::btree_set<std::pair<std::int64_t, std::int64_t>> gaps;
        std::int64_t cursor = split;
        const auto occupy = [&](std::int64_t lo, std::int64_t hi) {
            if (lo > cursor) gaps.emplace(lo - cursor, cursor);
            cursor = std::max(cursor, hi);
        };
        auto pin = pinned_.lower_bound(cluster_range(split, split + 1));
        auto piece = std::ranges::lower_bound(pieces_by_lcn_, split, {}, &PlacedPiece::lcn);
        for (;;) {
            while (piece != pieces_by_lcn_.end() && moving[piece->item]) ++piece;
            const bool have_pin = pin != pinned_.end();
            const bool have_piece = piece != pieces_by_lcn_.end();
            if (!have_pin && !have_piece) break;
            if (have_piece && (!have_pin || piece->lcn < first_cluster(*pin))) {
                occupy(piece->lcn, piece->end);
                ++piece;
            } else {
                occupy(first_cluster(*pin), end_cluster(*pin));
                ++pin;
            }
        }
        if (cursor < volume_.total_clusters) gaps.emplace(volume_.total_clusters - cursor, cursor);

        std::vector<std::size_t> unplaced;
        for (const std::size_t i : by_size_) {
            if (!moving[i]) continue;
            const std::int64_t size = items_[i].clusters;
            const auto g = gaps.lower_bound({size, std::numeric_limits<std::int64_t>::min()});
            if (g == gaps.end()) {
                unplaced.push_back(i);
                continue;
            }
            const auto [len, start] = *g;
            gaps.erase(g);
            l.dest[i] = start;
            if (!in_place(i, start)) l.moved += size;
            if (len > size) gaps.emplace(len - size, start + size);
        }

        // The rest: the top of the MFT zone's free room, then the top of the window. Half the
        // room, and at least 16 MiB (an extent free-space fragmentation counts as whole), stays
        // free for $MFT to grow into.
        std::int64_t zone_top = 0;
        std::int64_t zone_floor = 0;
        if (zone_room_ && zone_room_->second <= l.window_lo) {  // not when the gaps hold the zone
            zone_top = zone_room_->second;
            const std::int64_t keep = std::max((zone_room_->second - zone_room_->first) / 2,
                                               static_cast<std::int64_t>((16ull << 20) / volume_.cluster_size));
            zone_floor = std::min(zone_top, zone_room_->first + keep);
        }
        std::int64_t window_top = l.window_hi;
        for (const std::size_t i : unplaced) {
            const std::int64_t size = items_[i].clusters;
            if (zone_top - size >= zone_floor) {
                zone_top -= size;
                l.dest[i] = zone_top;
            } else if (window_top - size >= l.window_lo) {
                window_top -= size;
                l.dest[i] = window_top;
            } else {
                l.dest[i] = kNoRoom;
                l.no_room += size;
                continue;
            }
            l.moved += size;
        }

        // Predicted free space: the gaps left, the window below its stack, the zone room left,
        // and below the window the free extents and the sources of streams that move.
        std::vector<std::pair<std::int64_t, std::int64_t>> free_after;
        for (const auto& [len, start] : gaps) free_after.emplace_back(start, start + len);
        if (window_top > l.window_lo) free_after.emplace_back(l.window_lo, window_top);
        const auto zone_left = zone_top > zone_floor ? std::optional{std::pair{zone_room_->first, zone_top}} : std::nullopt;
        if (zone_left) free_after.push_back(*zone_left);
        for (const auto& f : clip(volume_.free, cluster_range(0, l.window_lo)))
            if (!zone_room_ || first_cluster(f) != zone_room_->first) free_after.emplace_back(first_cluster(f), end_cluster(f));
        for (std::size_t i = 0; i < items_.size(); ++i)
            if (l.dest[i] >= 0 && bounds_[i].first < l.window_lo)
                for (const Piece& p : pieces(items_[i]))
                    if (p.lcn < l.window_lo) free_after.emplace_back(p.lcn, std::min(p.lcn + p.clusters, l.window_lo));
        judge(l, free_after);
        for (std::size_t i = 0; i < items_.size(); ++i)
            if (items_[i].fragmented && l.dest[i] == kStays) l.left_fragmented += items_[i].clusters;
        const auto& budget = builder_.options().max_moved;
        l.over_budget = budget && static_cast<std::uint64_t>(l.moved) * volume_.cluster_size > *budget;
        return l;
    }

    /// The best ordered layout over the slacks: free space no worse than before, then fewest
    /// clusters without a place, then free-space
    /// fragmentation to 0.1 %, then least data moved, then the largest free extent.
    /// O(slacks · (items · log barriers + pieces · log pieces)).
    Layout choose_ordered_layout(const Progress& progress) const {
        const auto key = [](const Layout& l) {
            return std::tuple{l.over_budget, !l.keeps_promise,
                              l.no_room,     static_cast<std::int64_t>(l.fragmentation * 10 + 0.5),
                              l.moved,       -l.largest};
        };
        std::optional<Layout> best;
        for (std::size_t k = 0; k < kSlacks.size(); ++k) {
            progress.update(k, kSlacks.size());
            Layout l = evaluate_ordered(kSlacks[k]);
            if (!best || key(l) < key(*best)) best = std::move(l);
        }
        return std::move(*best);
    }

    /// Streams laid end to end in placement order from the start of the volume, skipping the
    /// barriers (a stream goes whole after a barrier it would cross). A stream in one
    /// fragment that already lies at or after the cursor, no more than `slack` clusters on,
    /// stays where it is (an anchor) and the cursor jumps past it: the streams already in
    /// order cost nothing, and the gaps they leave are the price. Every later destination lies
    /// after every anchor, so no move lands on a stream that stays.
    [[nodiscard]] Layout evaluate_ordered(std::int64_t slack) const {
        Layout l;
        l.dest.assign(items_.size(), kStays);
        ClusterSet blocked = barriers_;
        // Clusters taken after the plan, merged rather than sorted (five layouts of ten
        // million streams): the pinned ones and the anchors and destinations, laid down at an
        // ever higher cursor, are each in LCN order already; only the places of streams
        // without room, in placement order and few, are sorted before they are merged in.
        std::vector<std::pair<std::int64_t, std::int64_t>> held;
        std::vector<std::pair<std::int64_t, std::int64_t>> stuck;
        for (const auto& p : pinned_) held.emplace_back(first_cluster(p), end_cluster(p));
        const auto laid_from = static_cast<std::ptrdiff_t>(held.size());
        const std::int64_t n = volume_.total_clusters;
        // The first place at or after `at` where `size` clusters cross nothing blocked.
        const auto fit_from = [&](std::int64_t at, std::int64_t size) -> std::optional<std::int64_t> {
            while (at + size <= n) {
                const auto b = blocked.lower_bound(cluster_range(at, at + size));
                if (b == blocked.end() || first_cluster(*b) >= at + size) return at;
                at = end_cluster(*b);
            }
            return std::nullopt;
        };
        std::int64_t cursor = 0;
        for (const std::size_t i : in_order_) {
            const Item& it = items_[i];
            const Bounds& at_now = bounds_[i];
            if (!it.fragmented && at_now.first >= cursor && at_now.first - cursor <= slack) {
                held.emplace_back(at_now.first, at_now.end);
                cursor = at_now.end;
                continue;
            }
            const auto at = fit_from(cursor, it.clusters);
            if (!at) {
                // Nowhere left after the cursor: the stream stays, and later ones go around it.
                l.dest[i] = kNoRoom;
                l.no_room += it.clusters;
                for (const Piece& p : pieces(it)) {
                    blocked.add(cluster_range(p.lcn, p.lcn + p.clusters));
                    stuck.emplace_back(p.lcn, p.lcn + p.clusters);
                }
                continue;
            }
            l.dest[i] = *at;
            l.moved += it.clusters;
            held.emplace_back(*at, *at + it.clusters);
            cursor = *at + it.clusters;
        }
        std::inplace_merge(held.begin(), held.begin() + laid_from, held.end());
        std::ranges::sort(stuck);
        const auto stuck_from = static_cast<std::ptrdiff_t>(held.size());
        held.insert(held.end(), stuck.begin(), stuck.end());
        std::inplace_merge(held.begin(), held.begin() + stuck_from, held.end());
        std::vector<std::pair<std::int64_t, std::int64_t>> free_after;
        std::int64_t at = 0;
        for (const auto& [lo, hi] : held) {
            if (lo > at) free_after.emplace_back(at, lo);
            at = std::max(at, hi);
        }
        if (at < n) free_after.emplace_back(at, n);
        judge(l, free_after);
        const auto& budget = builder_.options().max_moved;
        l.over_budget = budget && static_cast<std::uint64_t>(l.moved) * volume_.cluster_size > *budget;
        return l;
    }

    /// The largest free extent inside the MFT zone, nullopt when the zone has none.
    [[nodiscard]] std::optional<std::pair<std::int64_t, std::int64_t>> largest_zone_room() const {
        std::optional<std::pair<std::int64_t, std::int64_t>> best;
        for (const auto& z : volume_.mft_zone)
            for (const auto& f : clip(volume_.free, z))
                if (!best || end_cluster(f) - first_cluster(f) > best->second - best->first)
                    best = std::pair{first_cluster(f), end_cluster(f)};
        return best;
    }

    /// Emits the moves of `layout` in an order in which every destination is free when its
    /// move comes: a stream waits for the streams that still sit on its destination; when
    /// every remaining stream waits (a cycle), one goes to free room in the window first.
    /// A stream laid out where it is stays; one that overlaps its destination slides there
    /// (slides) or, when that would take too many moves, waits for itself and so detours.
    void carry_out(Layout layout, const Progress& progress);

    static constexpr std::size_t kLargeVolume = 250000;
    /// Most moves a stream slides in (slides): beyond, it takes a detour instead.
    static constexpr std::int64_t kMostSlideMoves = 64;
    /// Gaps (clusters) an ordered layout may leave before a stream that stays.
    static constexpr std::array<std::int64_t, 5> kSlacks{0, 1, 8, 64, 512};

    Builder& builder_;
    const VolumeMap& volume_;
    std::vector<Item> items_;
    std::vector<Bounds> bounds_;  ///< per item
    std::vector<Piece> pieces_;  ///< every item's pieces, item by item (Item::first_piece)
    std::vector<std::uint32_t> by_size_;     ///< items largest first (unordered plans only)
    std::vector<std::uint32_t> in_order_;     ///< items in placement order (ordered plans only)
    std::vector<PlacedPiece> pieces_by_lcn_;  ///< every item's pieces, by LCN
    std::optional<std::pair<std::int64_t, std::int64_t>> zone_room_;  ///< largest free extent in the MFT zone
    FreeFigures before_;                                              ///< the free space before the plan
    ClusterSet pinned_;    ///< clusters no move of this plan frees or fills
    ClusterSet barriers_;  ///< pinned clusters and the MFT zone: a window never spans them
};

void Optimizer::carry_out(Layout layout, const Progress& progress) {
    const auto& streams = volume_.streams;
    std::vector<std::uint32_t> movers;  // item numbers, 32-bit as the items' own are
    for (std::size_t i = 0; i < items_.size(); ++i) {
        if (layout.dest[i] >= 0 && in_place(i, layout.dest[i])) layout.dest[i] = kStays;  // an anchor
        if (layout.dest[i] == kNoRoom) builder_.skip(streams[items_[i].stream], "no room left outside the free window");
        if (layout.dest[i] >= 0) movers.push_back(static_cast<std::uint32_t>(i));
    }
    // Every mover moves each of its pieces once to its place, and at most once more by a
    // detour that breaks a cycle. Reserving that bound means the list never grows by a copy
    // of itself: a million moves are 63 MB, and a copy made when 19 detours outgrew one move
    // a piece was the planner's peak. The bound costs address space, not memory: a list this
    // large is mapped fresh and the pages no move fills are never touched.
    std::size_t bound = builder_.plan().moves.size();
    for (const std::size_t i : movers) bound += 2 * std::size_t{items_[i].piece_count};
    builder_.plan().moves.reserve(bound);
    // Who sits on [lo, hi) before the first move: the streams that should move (a stream
    // without room stays, and holds its clusters against the others). Pieces never overlap,
    // so only the piece just before lo can reach into the range.
    const auto occupants = [&](std::int64_t lo, std::int64_t hi, auto&& visit) {
        auto it = std::ranges::lower_bound(pieces_by_lcn_, lo, {}, &PlacedPiece::lcn);
        if (it != pieces_by_lcn_.begin()) --it;
        for (; it != pieces_by_lcn_.end() && it->lcn < hi; ++it)
            if (it->end > lo && layout.dest[it->item] != kStays) visit(it->item);
    };
    std::vector<std::uint32_t> waiting(items_.size(), 0);  // streams on the destination
    // (i, j): item i waits for item j to leave. 32-bit, as 4-byte item numbers are what
    // keeps these lists small.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> waits;
    std::deque<std::uint32_t> ready;
    std::vector<std::size_t> on;
    for (const std::uint32_t i : movers) {
        on.clear();
        // A stream that slides waits for the others on its destination, not for itself.
        const bool sliding = slides(i, layout.dest[i]);
        occupants(layout.dest[i], layout.dest[i] + items_[i].clusters, [&](std::size_t j) {
            if (j != i || !sliding) on.push_back(j);
        });
        std::ranges::sort(on);
        on.erase(std::unique(on.begin(), on.end()), on.end());
        for (const std::size_t j : on) waits.emplace_back(i, static_cast<std::uint32_t>(j));
        waiting[i] = static_cast<std::uint32_t>(on.size());
        if (on.empty()) ready.push_back(i);
    }
    pieces_by_lcn_ = {};  // where streams were is all the waits needed of it
    const ItemLists blockers(items_.size(), waits);  // whom item i waits for
    for (auto& [i, j] : waits) std::swap(i, j);
    const ItemLists waiters(items_.size(), waits);  // who waits for item j
    waits = {};
    // Room for a detour: free clusters no move of the layout writes, kept up to date as
    // streams leave their places.
    FreeIndex detours = [&] {
        std::vector<std::pair<std::int64_t, std::int64_t>> written;
        for (const std::size_t i : movers) written.emplace_back(layout.dest[i], layout.dest[i] + items_[i].clusters);
        std::ranges::sort(written);
        ClusterSet room;
        auto w = written.begin();
        for (const auto& f : volume_.free) {
            std::int64_t from = first_cluster(f);
            const std::int64_t end = end_cluster(f);
            while (w != written.end() && w->second <= from) ++w;
            for (auto v = w; v != written.end() && v->first < end; ++v) {
                if (v->first > from) room.add(room.end(), cluster_range(from, v->first));
                from = std::max(from, v->second);
            }
            if (from < end) room.add(room.end(), cluster_range(from, end));
        }
        return FreeIndex(room);
    }();
    release_freed_memory();  // the sorted destinations and the room's set, before the moves fill
    // What streams leave is given to the room in sorted batches: the room is asked only
    // when the moves meet a cycle (twice in a million moves).
    PendingRanges<std::int64_t> freed;
    const auto to_detours = [&](std::int64_t lo, std::int64_t hi) { detours.give(lo, hi); };
    std::vector<char> left_home(items_.size(), 0);
    // Stream i leaves `pieces`: they are free now. The first time it leaves (its original
    // place) the streams waiting for that place may be ready.
    std::vector<std::pair<std::int64_t, std::int64_t>> headed;  // destinations of the waiters, one stream's
    const auto leave = [&](std::size_t i, std::span<const Piece> left, bool first_time) {
        // The parts of the place that neither a waiting stream nor this one (sliding, or
        // detoured from a place it overlaps) is headed for are room for detours.
        headed.clear();
        for (const std::size_t w : waiters[i])
            headed.emplace_back(layout.dest[w], layout.dest[w] + items_[w].clusters);
        headed.emplace_back(layout.dest[i], layout.dest[i] + items_[i].clusters);
        std::ranges::sort(headed);
        for (const Piece& p : left) {
            std::int64_t from = p.lcn;
            const std::int64_t end = p.lcn + p.clusters;
            for (const auto& [lo, hi] : headed) {
                if (hi <= from || lo >= end) continue;
                if (lo > from) freed.add(from, lo, to_detours);
                from = std::max(from, hi);
            }
            if (from < end) freed.add(from, end, to_detours);
        }
        if (!first_time) return;
        left_home[i] = 1;
        for (const std::uint32_t w : waiters[i])
            if (--waiting[w] == 0) ready.push_back(w);
    };
    // Moves stream i to `to`; false (and the stream skipped) when --max-growth objects.
    const auto emit = [&](std::size_t i, std::int64_t to) -> bool {
        const Stream& s = streams[items_[i].stream];
        if (auto reason = builder_.over_growth_budget(to, items_[i].clusters)) {
            builder_.skip(s, std::move(*reason));
            return false;
        }
        const std::span<Piece> now = pieces(items_[i]);
        if (slides(i, to))
            slide(i, to);
        else
            builder_.move_whole(s, now, to);
        std::int64_t at = to;
        for (Piece& p : now) {
            p.lcn = at;
            at += p.clusters;
        }
        return true;
    };

    std::size_t done = 0;
    std::vector<Piece> old;  // where the item being moved was, which leave() then frees
    std::vector<char> finished(items_.size(), 0);
    std::vector<char> detoured(items_.size(), 0);
    std::vector<char> stuck(items_.size(), 0);  // waits, through others, for a stream that cannot move
    std::vector<std::uint32_t> seen_in(items_.size(), 0);  // walk that last visited it, 0 none
    std::uint32_t walk = 0;  // one a mover at most
    std::size_t scan = 0;
    const auto find_cycle = [&]() -> std::optional<std::size_t> {
        for (; scan < movers.size(); ++scan) {
            const std::size_t start = movers[scan];
            if (finished[start] || detoured[start] || stuck[start]) continue;
            ++walk;
            std::vector<std::size_t> path;
            std::size_t at = start;
            for (;;) {
                if (seen_in[at] == walk) {  // a cycle: from `at` to the end of the path
                    const auto from = std::ranges::find(path, at);
                    return *std::ranges::min_element(from, path.end(), {}, [&](std::size_t j) { return items_[j].clusters; });
                }
                seen_in[at] = walk;
                path.push_back(at);
                const auto waits_for = blockers[at];
                const auto next = std::ranges::find_if(waits_for, [&](std::size_t j) { return !left_home[j]; });
                if (next == waits_for.end() || finished[*next] || layout.dest[*next] < 0 || stuck[*next]) {
                    for (const std::size_t j : path) stuck[j] = 1;
                    break;
                }
                at = *next;
            }
        }
        return std::nullopt;
    };
    bool stopped = false;
    while (done < movers.size() && !stopped) {
        if (ready.empty()) {
            // Every stream left waits for another: follow the waits until one repeats, and
            // detour the smallest stream of that cycle through the window.
            const auto pick = find_cycle();
            freed.give_to(to_detours);
            const auto room = pick ? detours.best_fit(items_[*pick].clusters) : std::nullopt;
            if (!room) break;
            const std::size_t i = *pick;
            if (builder_.over_moved_budget(items_[i].clusters)) {
                stopped = true;
                break;
            }
            const auto was = pieces(items_[i]);
            old.assign(was.begin(), was.end());
            if (!emit(i, *room)) {
                finished[i] = 1;  // stays where it is; whoever waits for its place stays too
                continue;
            }
            detoured[i] = 1;
            detours.take(*room, *room + items_[i].clusters);
            leave(i, old, true);
            continue;
        }
        const std::size_t i = ready.front();
        ready.pop_front();
        if (finished[i]) continue;
        if (++done % kProgressEvery == 0) progress.update(done, movers.size());
        if (builder_.over_moved_budget(items_[i].clusters)) {
            stopped = true;
            break;
        }
        const auto was = pieces(items_[i]);
        old.assign(was.begin(), was.end());
        if (!emit(i, layout.dest[i])) {
            finished[i] = 1;
            continue;
        }
        finished[i] = 1;
        leave(i, old, !detoured[i]);
    }
    for (const std::size_t i : movers) {
        if (finished[i]) continue;
        builder_.skip(streams[items_[i].stream], stopped ? builder_.moved_budget_reason()
                                                         : "its destination is held by a stream that could not move");
    }
    progress.update(movers.size(), movers.size());
}

}  // namespace

void plan_optimize(Builder& builder, const Progress& progress) { Optimizer(builder).plan(progress); }

}  // namespace guestfrag::planner
