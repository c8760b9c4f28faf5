// SPDX-License-Identifier: GPL-2.0-or-later
// Strategy "shrink": pack data into the fewest granules (docs/planner.md §8).
#include <algorithm>

#include "core/io/heap.hpp"
#include "core/plan/intervals.hpp"
#include "core/plan/strategy.hpp"

namespace guestfrag::planner {

namespace {

/// Where granules of `granule` bytes of the virtual disk fall on the volume's clusters.
/// Works for any partition offset: a cluster may straddle two granules when the volume does
/// not start on a cluster multiple of the granule.
class Granules {
public:
    Granules(const VolumeMap& v, std::uint64_t granule)
        : po_(v.partition_offset), cs_(v.cluster_size), g_(granule), total_(v.total_clusters) {
        const std::uint64_t end = po_ + static_cast<std::uint64_t>(total_) * cs_;
        first_ = po_ / g_;
        count_ = total_ > 0 ? (end + g_ - 1) / g_ - first_ : 0;
    }

    [[nodiscard]] std::size_t count() const { return count_; }
    /// First cluster touching granule i (0-based from the volume's first granule).
    [[nodiscard]] std::int64_t first_cluster_of(std::size_t i) const {
        const std::uint64_t lo = (first_ + i) * g_;
        return lo <= po_ ? 0 : static_cast<std::int64_t>((lo - po_) / cs_);
    }
    /// One past the last cluster touching granule i.
    [[nodiscard]] std::int64_t end_cluster_of(std::size_t i) const {
        const std::uint64_t hi = (first_ + i + 1) * g_;
        return std::min<std::int64_t>(total_, static_cast<std::int64_t>((hi - po_ + cs_ - 1) / cs_));
    }
    /// Whether granule i lies wholly inside the volume (only those can become reclaimable).
    [[nodiscard]] bool inside(std::size_t i) const {
        return (first_ + i) * g_ >= po_ &&
               (first_ + i + 1) * g_ <= po_ + static_cast<std::uint64_t>(total_) * cs_;
    }
    /// Granules touched by clusters [lo, hi), as [first, last] indices.
    [[nodiscard]] std::pair<std::size_t, std::size_t> touched(std::int64_t lo, std::int64_t hi) const {
        const std::uint64_t a = po_ + static_cast<std::uint64_t>(lo) * cs_;
        const std::uint64_t b = po_ + static_cast<std::uint64_t>(hi) * cs_ - 1;
        return {a / g_ - first_, b / g_ - first_};
    }
    [[nodiscard]] ByteSet::interval_type bytes(std::size_t i) const {
        return ByteSet::interval_type::right_open((first_ + i) * g_, (first_ + i + 1) * g_);
    }

private:
    std::uint64_t po_, cs_, g_;
    std::int64_t total_;
    std::uint64_t first_ = 0;
    std::size_t count_ = 0;
};

enum class State : std::uint8_t {
    Edge,    ///< partly outside the volume: never reclaimable, free to receive data
    Empty,   ///< wholly free (from the start or evacuated)
    Target,  ///< holds data; may receive more or be evacuated
    Source,  ///< being evacuated
};

/// A run of clusters and the stream that owns it, for "who lives in this granule".
struct Owned {
    std::int64_t lo = 0;
    std::int64_t hi = 0;
    std::size_t stream = 0;
    std::int64_t vcn = 0;  ///< of `lo`
};

}  // namespace

void plan_shrink(Builder& builder, const Progress& progress) {
    const VolumeMap& volume = builder.volume();
    const auto& streams = volume.streams;
    const std::uint64_t granule = builder.growth().granule();
    if (granule <= volume.cluster_size || volume.cluster_size == 0) {
        builder.plan().notes.push_back(
            "the granule (" + bytes_text(granule) +
            ") is not larger than a cluster: every free cluster already lies in "
            "wholly free granules, so there is nothing to pack; try --granule 1MiB");
        return;
    }
    const Granules grid(volume, granule);
    const std::size_t n = grid.count();
    const auto per_granule = static_cast<std::int64_t>(granule / volume.cluster_size);

    // Used clusters per granule.
    std::vector<std::int64_t> used(n, 0);
    const auto add_used = [&](std::int64_t lo, std::int64_t hi, std::int64_t sign) {
        const auto [a, b] = grid.touched(lo, hi);
        for (std::size_t i = a; i <= b; ++i)
            used[i] += sign * (std::min(hi, grid.end_cluster_of(i)) - std::max(lo, grid.first_cluster_of(i)));
    };
    ClusterSet in_use(cluster_range(0, volume.total_clusters));
    in_use -= volume.free;
    for (const auto& i : in_use) add_used(first_cluster(i), end_cluster(i), +1);

    std::vector<State> state(n, State::Target);
    std::vector<bool> received(n, false);
    ClusterSet allowed =
        builder.growth().clusters_in_top_granules() & ClusterSet(cluster_range(0, volume.total_clusters));
    allowed -= volume.unmovable;
    for (std::size_t i = 0; i < n; ++i) {
        if (!grid.inside(i))
            state[i] = State::Edge;
        else if (used[i] == 0) {
            state[i] = State::Empty;
            allowed.subtract(cluster_range(grid.first_cluster_of(i), grid.end_cluster_of(i)));
        }
    }
    Pool pool(volume.free, std::move(allowed), volume.mft_zone);

    // Who owns which clusters, and which streams shrink may move (whole, at most a granule).
    std::vector<Owned> owners;
    std::size_t runs = 0;
    for (const Stream& s : streams) runs += s.extents.size();
    // At a million streams, 32 MB: grown by doubling it was a sixth of the planning.
    reserve_huge(owners, runs);
    std::vector<bool> movable(streams.size(), false);
    for (std::size_t s = 0; s < streams.size(); ++s) {
        for (const Extent& e : streams[s].extents)
            if (e.lcn >= 0 && e.clusters > 0) owners.push_back({e.lcn, e.lcn + e.clusters, s, e.vcn});
        const std::int64_t clusters = streams[s].allocated_clusters();
        movable[s] = streams[s].placement == Placement::Movable && clusters > 0 && clusters <= per_granule &&
                     !builder.excluded_by(streams[s]);
    }
    std::ranges::sort(owners, {}, &Owned::lo);
    std::vector<bool> moved(streams.size(), false);
    // The runs of streams in clusters [lo, hi), clipped to it; a stream moved whole is
    // elsewhere now and left out.
    const auto parts_in = [&](std::int64_t lo, std::int64_t hi) {
        std::vector<Owned> parts;
        auto it = std::ranges::lower_bound(owners, lo, {}, &Owned::lo);
        if (it != owners.begin() && std::prev(it)->hi > lo) --it;
        for (; it != owners.end() && it->lo < hi; ++it) {
            if (moved[it->stream]) continue;
            const std::int64_t a = std::max(lo, it->lo);
            parts.push_back({a, std::min(hi, it->hi), it->stream, it->vcn + (a - it->lo)});
        }
        return parts;
    };

    // Evacuation candidates: granules holding data the top layer stores, sparsest first.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < n; ++i)
        if (state[i] == State::Target && builder.growth().top_allocated(grid.bytes(i))) order.push_back(i);
    std::ranges::stable_sort(order, [&used](std::size_t a, std::size_t b) { return used[a] < used[b]; });

    std::uint64_t blocked = 0;
    std::uint64_t no_room = 0;
    std::uint64_t emptied = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (k % kProgressEvery == 0) progress.update(k, order.size());
        const std::size_t g = order[k];
        if (state[g] != State::Target || received[g] || used[g] == 0) continue;
        const std::int64_t lo = grid.first_cluster_of(g);
        const std::int64_t hi = grid.end_cluster_of(g);

        // The streams living in g; any clusters not theirs (or theirs but not movable) pin it.
        std::vector<std::size_t> movers;
        std::int64_t owned = 0;
        bool pinned = false;
        for (const Owned& part : parts_in(lo, hi)) {
            owned += part.hi - part.lo;
            if (!movable[part.stream]) pinned = true;
            movers.push_back(part.stream);
        }
        if (pinned || owned != used[g]) {
            ++blocked;
            continue;
        }
        std::ranges::sort(movers);
        movers.erase(std::unique(movers.begin(), movers.end()), movers.end());
        std::ranges::stable_sort(movers, [&streams](std::size_t a, std::size_t b) {
            return streams[a].allocated_clusters() > streams[b].allocated_clusters();
        });
        std::int64_t cost = 0;
        for (const std::size_t s : movers) cost += streams[s].allocated_clusters();
        if (builder.over_moved_budget(cost)) {
            builder.plan().notes.push_back("stopped: " + builder.moved_budget_reason());
            break;
        }

        // Tentatively place every stream of g; undo all of it if one does not fit.
        state[g] = State::Source;
        const ClusterSet withdrawn = pool.take_all_in(lo, hi);
        std::vector<std::pair<std::size_t, std::int64_t>> placed;
        bool fits = true;
        for (const std::size_t s : movers) {
            const std::int64_t clusters = streams[s].allocated_clusters();
            const auto fit = pool.best_fit(clusters);
            if (!fit || builder.over_growth_budget(fit->lcn, clusters)) {
                fits = false;
                break;
            }
            pool.take(fit->lcn, fit->lcn + clusters);
            placed.emplace_back(s, fit->lcn);
        }
        if (!fits) {
            for (const auto& [s, lcn] : placed) pool.give(lcn, lcn + streams[s].allocated_clusters());
            for (const auto& i : withdrawn) pool.give(first_cluster(i), end_cluster(i));
            state[g] = State::Target;
            ++no_room;
            continue;
        }

        std::vector<std::vector<Piece>> sources;
        for (const auto& [s, lcn] : placed) {
            sources.push_back(pieces_of(streams[s]));
            builder.move_whole(streams[s], sources.back(), lcn);
            moved[s] = true;
            const std::int64_t clusters = streams[s].allocated_clusters();
            add_used(lcn, lcn + clusters, +1);
            const auto [a, b] = grid.touched(lcn, lcn + clusters);
            for (std::size_t i = a; i <= b; ++i) received[i] = true;
        }
        // Sources leave their granules; those left with nothing become Empty and leave the pool.
        for (const auto& pieces : sources)
            for (const Piece& p : pieces) add_used(p.lcn, p.lcn + p.clusters, -1);
        for (const auto& pieces : sources) {
            for (const Piece& p : pieces) {
                const auto [a, b] = grid.touched(p.lcn, p.lcn + p.clusters);
                for (std::size_t i = a; i <= b; ++i) {
                    if ((state[i] == State::Target || state[i] == State::Source) && used[i] == 0) {
                        state[i] = State::Empty;
                        ++emptied;
                        (void)pool.take_all_in(grid.first_cluster_of(i), grid.end_cluster_of(i));
                    }
                }
            }
        }
        if (state[g] == State::Source) state[g] = State::Target;  // kept data (cross-linked input)
        // Freed clusters join the pool where every granule they touch can still take data.
        for (const auto& pieces : sources) {
            for (const Piece& p : pieces) {
                ClusterSet freed(cluster_range(p.lcn, p.lcn + p.clusters));
                const auto [a, b] = grid.touched(p.lcn, p.lcn + p.clusters);
                for (std::size_t i = a; i <= b; ++i)
                    if (state[i] == State::Empty || state[i] == State::Source)
                        freed.subtract(cluster_range(grid.first_cluster_of(i), grid.end_cluster_of(i)));
                for (const auto& f : freed) pool.give(first_cluster(f), end_cluster(f));
            }
        }
    }
    progress.update(order.size(), order.size());

    // Step 6: the granules whole streams could not empty, sparsest first, emptied part by
    // part. A granule whose parts do not all fit stops it: the denser ones would not either.
    std::uint64_t split = 0;
    if (builder.options().split_streams) {
        std::vector<std::size_t> rest;
        for (const std::size_t g : order)
            if (state[g] == State::Target && !received[g] && used[g] > 0) rest.push_back(g);
        std::ranges::stable_sort(rest, [&used](std::size_t a, std::size_t b) { return used[a] < used[b]; });
        for (const std::size_t g : rest) {
            if (state[g] != State::Target || received[g] || used[g] == 0) continue;
            const std::int64_t lo = grid.first_cluster_of(g);
            const std::int64_t hi = grid.end_cluster_of(g);
            // A part moved out of another granule lay outside g.
            const std::vector<Owned> parts = parts_in(lo, hi);
            std::int64_t owned = 0;
            bool pinned = false;
            for (const Owned& part : parts) {
                const Stream& stream = streams[part.stream];
                // Compressed and sparse streams move whole units only (docs/planner.md §1):
                // never in parts.
                if (stream.placement != Placement::Movable || stream.compression_unit != 0 ||
                    builder.excluded_by(stream))
                    pinned = true;
                owned += part.hi - part.lo;
            }
            if (pinned || owned != used[g]) continue;
            if (builder.over_moved_budget(owned)) {
                builder.plan().notes.push_back("stopped: " + builder.moved_budget_reason());
                break;
            }
            state[g] = State::Source;
            const ClusterSet withdrawn = pool.take_all_in(lo, hi);
            struct Placed {
                std::size_t stream;
                std::int64_t vcn, from, to, clusters;
            };
            std::vector<Placed> placed;
            bool fits = true;
            for (const Owned& part : parts) {
                for (std::int64_t at = part.lo; fits && at < part.hi;) {
                    const std::int64_t want = std::min(part.hi - at, pool.largest());
                    const auto fit = want > 0 ? pool.best_fit(want) : std::nullopt;
                    if (!fit || builder.over_growth_budget(fit->lcn, want)) {
                        fits = false;
                        break;
                    }
                    pool.take(fit->lcn, fit->lcn + want);
                    placed.push_back({part.stream, part.vcn + (at - part.lo), at, fit->lcn, want});
                    at += want;
                }
                if (!fits) break;
            }
            if (!fits) {
                for (const Placed& p : placed) pool.give(p.to, p.to + p.clusters);
                for (const auto& i : withdrawn) pool.give(first_cluster(i), end_cluster(i));
                state[g] = State::Target;
                ++no_room;
                break;
            }
            for (const Placed& p : placed) {
                builder.move_part(streams[p.stream], p.vcn, p.from, p.to, p.clusters);
                add_used(p.to, p.to + p.clusters, +1);
                add_used(p.from, p.from + p.clusters, -1);
                const auto [a, b] = grid.touched(p.to, p.to + p.clusters);
                for (std::size_t j = a; j <= b; ++j) received[j] = true;
            }
            state[g] = State::Empty;
            ++emptied;
            ++split;
        }
    }

    Plan& plan = builder.plan();
    plan.notes.push_back(std::to_string(emptied) + " granules of " + bytes_text(granule) + " emptied");
    if (split != 0)
        plan.notes.push_back(std::to_string(split) + " of them by moving the parts of streams lying in them");
    if (blocked != 0)
        plan.notes.push_back(
            std::to_string(blocked) +
            " granules hold data shrink does not move (unmovable, excluded, or a stream larger "
            "than a granule)");
    if (no_room != 0)
        plan.notes.push_back(
            std::to_string(no_room) +
            " granules could not be emptied: no room for their streams in granules that stay in use");
}

}  // namespace guestfrag::planner
