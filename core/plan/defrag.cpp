// SPDX-License-Identifier: GPL-2.0-or-later
// Strategies "defrag" and "thin-safe" (docs/planner.md §5 and §7).
#include <algorithm>

#include "core/plan/intervals.hpp"
#include "core/plan/strategy.hpp"

namespace guestfrag::planner {

namespace {

struct Candidate {
    std::size_t index = 0;
    std::uint64_t fragments = 0;
};

bool all_fragments_large(const Stream& s, std::uint32_t cluster_size) {
    const auto sizes = fragment_sizes(s);
    return std::ranges::all_of(sizes, [cluster_size](std::int64_t clusters) {
        return static_cast<std::uint64_t>(clusters) * cluster_size >= kLeaveAloneBytes;
    });
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
                                         (streams[i].reason.empty() ? "" : ": " + streams[i].reason));
            continue;
        }
        candidates.push_back({i, fragments});
    }
    // Most fragments first, then larger, then by record and label for a stable order.
    std::ranges::sort(candidates, [&streams](const Candidate& a, const Candidate& b) {
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
        const auto fit = pool.best_fit(needed);
        if (!fit) {
            builder.skip(s, "no free region of " + std::to_string(needed) + " clusters" +
                                (thin_safe ? " inside allocated granules" : "") + " (largest is " +
                                std::to_string(pool.largest()) + ")");
            continue;
        }
        if (auto reason = builder.over_growth_budget(fit->lcn, needed)) {
            builder.skip(s, std::move(*reason));
            continue;
        }
        const std::vector<Piece> pieces = pieces_of(s);
        builder.move_whole(s, pieces, fit->lcn);
        pool.take(fit->lcn, fit->lcn + needed);
        for (const Piece& p : pieces) pool.give(p.lcn, p.lcn + p.clusters);
        if (fit->avoided) ++in_zone;
    }
    progress.update(candidates.size(), candidates.size());
    if (in_zone != 0)
        builder.plan().notes.push_back(std::to_string(in_zone) +
                                       " streams were placed in the MFT zone: no free region outside it was large "
                                       "enough");
}

}  // namespace guestfrag::planner
