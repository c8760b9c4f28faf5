// SPDX-License-Identifier: GPL-2.0-or-later
// Strategies "defrag" and "thin-safe" (docs/planner.md §5 and §7).
#include <algorithm>
#include <deque>

#include "core/plan/intervals.hpp"
#include "core/plan/strategy.hpp"

namespace guestfrag::planner {

namespace {

struct Candidate {
    std::size_t index = 0;
    std::uint64_t fragments = 0;
};

/// Free extents (and streams back) an ordered defrag looks at for room after a stream's
/// predecessor before it settles for best fit.
constexpr std::size_t kOrderedVisits = 64;

bool all_fragments_large(const Stream& s, std::uint32_t cluster_size) {
    const auto sizes = fragment_sizes(s);
    return std::ranges::all_of(sizes, [cluster_size](std::int64_t clusters) {
        return static_cast<std::uint64_t>(clusters) * cluster_size >= kLeaveAloneBytes;
    });
}

/// The crumbs of free space a defrag leaves behind (the pieces its streams came from) filled
/// with whole one-fragment streams of exactly their size, smallest crumbs first, until free
/// space is no worse than before. Only a stream with free space beside it is taken, so its
/// old place joins an existing extent instead of becoming a new crumb.
template <class Done>
void fill_crumbs(Builder& builder, Pool& pool, FreeIndex& free_now, std::vector<char>& moved, const Done& done) {
    const VolumeMap& volume = builder.volume();
    const auto& streams = volume.streams;
    constexpr std::int64_t kCrumbMax = 256;  // clusters: the crumbs a defrag's pieces leave
    std::vector<std::deque<std::size_t>> fillers(kCrumbMax + 1);  // by size in clusters
    for (std::size_t i = 0; i < streams.size(); ++i) {
        const Stream& s = streams[i];
        if (moved[i] || s.placement != Placement::Movable || s.fragments() != 1) continue;
        const std::int64_t clusters = s.allocated_clusters();
        if (clusters > kCrumbMax || builder.excluded_by(s)) continue;
        fillers[static_cast<std::size_t>(clusters)].push_back(i);
    }
    std::vector<FreeIndex::Range> crumbs;
    (void)free_now.first_by_size(1, [&](FreeIndex::Range e) -> std::optional<bool> {
        if (e.second - e.first > kCrumbMax) return true;
        crumbs.push_back(e);
        return std::nullopt;
    });
    const auto beside_free = [&free_now](std::int64_t lo, std::int64_t hi, FreeIndex::Range crumb) {
        const auto before = free_now.extent_from(lo - 1);
        const auto after = free_now.extent_from(hi);
        const bool left = lo > 0 && before && before->second == lo && *before != crumb;
        const bool right = after && after->first == hi && *after != crumb;
        return left || right;
    };
    for (FreeIndex::Range crumb : crumbs) {
        // Fill the crumb from its start with the largest fitting streams until nothing fits.
        while (crumb.first < crumb.second) {
            if (done()) return;
            if (free_now.extent_from(crumb.first) != crumb || pool.all().extent_from(crumb.first) != crumb) break;
            const std::int64_t room = crumb.second - crumb.first;
            // The largest stream that fits and has free space beside it. A few tries per size,
            // a candidate that fails going to the back: O(crumb size) per filled piece.
            std::optional<std::size_t> pick;
            std::int64_t size = room + 1;
            while (--size >= 1 && !pick) {
                auto& candidates = fillers[static_cast<std::size_t>(size)];
                for (int tries = 0; tries < 4 && !candidates.empty() && !pick; ++tries) {
                    const std::size_t i = candidates.front();
                    candidates.pop_front();
                    const std::int64_t lo = pieces_of(streams[i]).front().lcn;
                    if (beside_free(lo, lo + size, crumb))
                        pick = i;
                    else
                        candidates.push_back(i);
                }
                if (pick) break;
            }
            if (!pick) break;
            const std::size_t i = *pick;
            const std::vector<Piece> pieces = pieces_of(streams[i]);
            const std::int64_t lo = pieces.front().lcn;
            if (builder.over_moved_budget(size)) return;
            if (builder.over_growth_budget(crumb.first, size)) continue;
            builder.move_whole(streams[i], pieces, crumb.first);
            moved[i] = 1;
            pool.take(crumb.first, crumb.first + size);
            free_now.take(crumb.first, crumb.first + size);
            pool.give(lo, lo + size);
            free_now.give(lo, lo + size);
            crumb.first += size;
        }
    }
}

}  // namespace

void plan_defrag(Builder& builder, bool thin_safe, const Progress& progress) {
    const VolumeMap& volume = builder.volume();
    const auto& streams = volume.streams;

    std::vector<Candidate> candidates;
    for (std::size_t i = 0; i < streams.size(); ++i) {
        const std::uint64_t fragments = streams[i].fragments();
        if (fragments <= 1) continue;
        if (streams[i].placement != Placement::Movable) {
            builder.skip(streams[i], std::string(streams[i].placement == Placement::Unmovable ? "unmovable" : "excluded") +
                                         (streams[i].reason.empty() ? "" : ": " + std::string(streams[i].reason)));
            continue;
        }
        candidates.push_back({i, fragments});
    }
    // Most fragments first, then larger, then by record and label for a stable order; in
    // placement order when there is one, so that a stream's predecessor has its place
    // before the stream looks for room after it.
    std::ranges::sort(candidates, [&](const Candidate& a, const Candidate& b) {
        if (builder.ordered()) return builder.rank(a.index) < builder.rank(b.index);
        if (a.fragments != b.fragments) return a.fragments > b.fragments;
        const Stream& x = streams[a.index];
        const Stream& y = streams[b.index];
        if (x.size != y.size) return x.size > y.size;
        if (x.mft_record != y.mft_record) return x.mft_record < y.mft_record;
        return a.index < b.index;
    });

    const ClusterSet everything(cluster_range(0, volume.total_clusters));
    ClusterSet allowed = thin_safe ? builder.growth().clusters_in_top_granules() & everything : everything;
    allowed -= volume.unmovable;
    Pool pool(volume.free, std::move(allowed), volume.mft_zone);
    // The whole volume's free space, to keep the plan from leaving it worse than it was.
    FreeIndex free_now(volume.free, volume.cluster_size);
    const double fragmentation_before = free_now.fragmentation_percent();
    const std::int64_t largest_before = free_now.largest();
    const auto no_worse = [&] {
        return free_now.fragmentation_percent() <= fragmentation_before && free_now.largest() >= largest_before;
    };
    // The longest prefix of whole streams after which free space is no worse than before.
    std::size_t keep_moves = 0;
    std::size_t in_zone_kept = 0;

    std::vector<char> moved(streams.size(), 0);
    std::vector<std::int64_t> moved_to(streams.size(), -1);  // where a moved stream starts now
    // Where a reader in placement order is when it reaches stream i: the end of the last
    // piece of the nearest stream before it that has clusters.
    const auto predecessor_end = [&](std::size_t i) -> std::optional<std::int64_t> {
        const auto& sequence = builder.sequence();
        for (std::size_t r = builder.rank(i), looked = 0; r > 0 && looked < kOrderedVisits; ++looked) {
            const std::size_t j = sequence[--r];
            if (moved_to[j] >= 0) return moved_to[j] + streams[j].allocated_clusters();
            const std::vector<Piece> pieces = pieces_of(streams[j]);
            if (!pieces.empty()) return pieces.back().lcn + pieces.back().clusters;
        }
        return std::nullopt;
    };
    std::uint64_t in_zone = 0;
    bool budget_spent = false;
    for (std::size_t n = 0; n < candidates.size(); ++n) {
        if (n % kProgressEvery == 0) progress.update(n, candidates.size());
        const Stream& s = streams[candidates[n].index];
        if (budget_spent) {
            builder.skip(s, builder.moved_budget_reason());
            continue;
        }
        if (const auto glob = builder.excluded_by(s)) {
            builder.skip(s, "matches --exclude " + *glob);
            continue;
        }
        if (all_fragments_large(s, volume.cluster_size)) {
            builder.skip(s, "every fragment is at least 64 MiB: left as it is");
            continue;
        }
        const std::int64_t needed = s.allocated_clusters();
        if (builder.over_moved_budget(needed)) {
            budget_spent = true;
            builder.skip(s, builder.moved_budget_reason());
            continue;
        }
        // In placement order, the first room after where the stream before it ends, when free
        // space stays no worse than before the plan with the stream there; best fit otherwise.
        const std::vector<Piece> pieces = pieces_of(s);
        std::optional<Pool::Fit> fit;
        if (const auto after = builder.ordered() ? predecessor_end(candidates[n].index) : std::nullopt)
            if (const auto at = pool.first_fit_from(*after, needed, kOrderedVisits)) {
                free_now.take(*at, *at + needed);
                for (const Piece& p : pieces) free_now.give(p.lcn, p.lcn + p.clusters);
                if (no_worse()) fit = Pool::Fit{*at, false};
                for (const Piece& p : pieces) free_now.take(p.lcn, p.lcn + p.clusters);
                free_now.give(*at, *at + needed);
            }
        if (!fit) fit = pool.best_fit(needed);
        if (!fit) {
            builder.skip(s, "no free region of " + std::to_string(needed) + " clusters" +
                                (thin_safe ? " inside allocated granules" : "") + " (the largest is " +
                                std::to_string(pool.largest()) + " clusters)");
            continue;
        }
        if (auto reason = builder.over_growth_budget(fit->lcn, needed)) {
            builder.skip(s, std::move(*reason));
            continue;
        }
        free_now.take(fit->lcn, fit->lcn + needed);
        for (const Piece& p : pieces) free_now.give(p.lcn, p.lcn + p.clusters);
        if (free_now.largest() < largest_before) {
            // Only the largest free extent had room: moving the stream would shrink it.
            for (const Piece& p : pieces) free_now.take(p.lcn, p.lcn + p.clusters);
            free_now.give(fit->lcn, fit->lcn + needed);
            builder.skip(s, "only the largest free extent has room for its " + std::to_string(needed) +
                                " clusters, and defrag does not make it smaller");
            continue;
        }
        builder.move_whole(s, pieces, fit->lcn);
        moved[candidates[n].index] = 1;
        moved_to[candidates[n].index] = fit->lcn;
        pool.take(fit->lcn, fit->lcn + needed);
        for (const Piece& p : pieces) pool.give(p.lcn, p.lcn + p.clusters);
        if (fit->avoided) ++in_zone;
        if (no_worse()) {
            keep_moves = builder.plan().moves.size();
            in_zone_kept = in_zone;
        }
    }
    progress.update(candidates.size(), candidates.size());
    if (!budget_spent && !no_worse()) {
        fill_crumbs(builder, pool, free_now, moved, no_worse);
        if (no_worse()) {
            keep_moves = builder.plan().moves.size();
            in_zone_kept = in_zone;
        }
    }
    Plan& plan = builder.plan();
    if (keep_moves != plan.moves.size()) {
        // Cut after the last stream at which free space was no worse than before; the streams
        // cut off are listed with the reason.
        const auto dropped = streams_in(plan.moves, keep_moves);
        plan.moves.resize(keep_moves);
        for (const auto& [record, label] : dropped)
            plan.skipped.push_back({record, label,
                                    "moving it would leave free space more fragmented than before the plan "
                                    "(strategy optimize packs free space as well)"});
        in_zone = in_zone_kept;
        plan.notes.push_back(std::to_string(dropped.size()) +
                             " streams were left out: moving them would leave free space more fragmented than "
                             "before the plan");
    }
    if (in_zone != 0)
        builder.plan().notes.push_back(std::to_string(in_zone) +
                                       " streams were placed in the MFT zone: no free region outside it was large "
                                       "enough");
}

}  // namespace guestfrag::planner
