// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plan/strategy.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"
#include "core/model/paths.hpp"
#include "core/plan/intervals.hpp"

namespace guestfrag::planner {

std::vector<Piece> pieces_of(const Stream& stream) {
    std::vector<Piece> pieces;
    for (const Extent& e : stream.extents) {
        if (e.lcn < 0 || e.clusters <= 0) continue;
        if (!pieces.empty()) {
            Piece& last = pieces.back();
            if (last.vcn + last.clusters == e.vcn && last.lcn + last.clusters == e.lcn) {
                last.clusters += e.clusters;
                continue;
            }
        }
        pieces.push_back({e.vcn, e.lcn, e.clusters});
    }
    return pieces;
}

std::vector<std::int64_t> fragment_sizes(const Stream& stream) {
    std::vector<std::int64_t> sizes;
    std::int64_t next_lcn = -1;  // where the last fragment ends on disk
    for (const Extent& e : stream.extents) {
        if (e.lcn < 0 || e.clusters <= 0) continue;
        if (!sizes.empty() && e.lcn == next_lcn)
            sizes.back() += e.clusters;
        else
            sizes.push_back(e.clusters);
        next_lcn = e.lcn + e.clusters;
    }
    return sizes;
}

Pool::Pool(const ClusterSet& free, ClusterSet allowed, ClusterSet avoid)
    : allowed_(std::move(allowed)), avoid_(std::move(avoid)), all_(free & allowed_) {}

std::optional<Pool::Fit> Pool::best_fit(std::int64_t clusters) const {
    // Best fit over room outside `avoid`: the smallest extent that does not touch it, or a
    // smaller stretch outside `avoid` of one of the few extents that do.
    std::optional<std::pair<std::int64_t, std::int64_t>> best;  // (length, start)
    const auto offer = [&best](std::int64_t lo, std::int64_t hi) {
        if (!best || std::pair{hi - lo, lo} < *best) best = std::pair{hi - lo, lo};
    };
    (void)all_.first_by_size(clusters, [&](FreeIndex::Range e) -> std::optional<bool> {
        if (boost::icl::intersects(avoid_, cluster_range(e.first, e.second))) return std::nullopt;
        offer(e.first, e.second);
        return true;
    });
    // Only an extent that crosses an edge of a zone has room outside it: the one holding the
    // cluster before the zone and the one holding the cluster after it. Looking at just those
    // two keeps a call O(zones · log extents) however many freed extents pile up inside a
    // zone as packing runs (a shrink of a million files spent 4 s walking them).
    const auto offer_outside = [&](std::int64_t lcn) {
        const auto e = all_.extent_from(lcn);
        if (!e || e->first > lcn || !boost::icl::intersects(avoid_, cluster_range(e->first, e->second))) return;
        ClusterSet parts(cluster_range(e->first, e->second));
        parts -= clip(avoid_, cluster_range(e->first, e->second));
        for (const auto& p : parts)
            if (end_cluster(p) - first_cluster(p) >= clusters) offer(first_cluster(p), end_cluster(p));
    };
    for (const auto& zone : avoid_) {
        offer_outside(first_cluster(zone) - 1);
        offer_outside(end_cluster(zone));
    }
    if (best) return Fit{best->second, false};
    if (const auto lcn = all_.best_fit(clusters)) return Fit{*lcn, true};
    return std::nullopt;
}

std::optional<std::int64_t> Pool::first_fit_from(std::int64_t lcn, std::int64_t clusters,
                                                 std::size_t visits) const {
    auto e = all_.extent_from(lcn);
    for (std::size_t k = 0; e && k < visits; ++k, e = all_.extent_from(e->second)) {
        const std::int64_t lo = std::max(e->first, lcn);
        if (e->second - lo >= clusters && !boost::icl::intersects(avoid_, cluster_range(lo, lo + clusters)))
            return lo;
    }
    return std::nullopt;
}

void Pool::take(std::int64_t lo, std::int64_t hi) { all_.take(lo, hi); }

void Pool::give(std::int64_t lo, std::int64_t hi) {
    if (lo >= hi) return;
    const auto range = cluster_range(lo, hi);
    if (boost::icl::contains(allowed_, range)) {  // the common case: no ClusterSet to build
        all_.give(lo, hi);
        return;
    }
    for (const auto& i : clip(allowed_, range)) all_.give(first_cluster(i), end_cluster(i));
}

ClusterSet Pool::take_all_in(std::int64_t lo, std::int64_t hi) {
    ClusterSet taken;
    for (const auto& [a, b] : all_.overlapping(lo, hi)) {
        take(a, b);
        taken.add(taken.end(), cluster_range(a, b));
    }
    return taken;
}

namespace {

/// Trace order: the unnamed $DATA of each file the trace names, in trace order (a file named
/// again stays where it was first read), then every other stream in path order. Paths that
/// name no file are counted in a note; the rest are placed.
std::vector<std::size_t> trace_sequence(const VolumeMap& volume, const std::vector<std::string>& paths,
                                        std::vector<std::string>& notes) {
    const auto& streams = volume.streams;
    const std::unordered_map<std::string, std::uint64_t> records = index_paths(volume);
    std::vector<std::size_t> sequence;
    std::vector<char> placed(streams.size(), 0);
    std::vector<std::string> missing;
    std::unordered_set<std::string> seen_missing;
    for (const std::string& path : paths) {
        const auto file = records.find(fold_trace_path(path));
        if (file == records.end()) {
            if (seen_missing.insert(path).second) missing.push_back(path);
            continue;
        }
        auto it = std::ranges::lower_bound(streams, file->second, {}, &Stream::mft_record);
        for (; it != streams.end() && it->mft_record == file->second; ++it) {
            if (it->type != static_cast<std::uint32_t>(AttrType::Data) || !it->name.empty()) continue;
            const auto i = static_cast<std::size_t>(it - streams.begin());
            if (!placed[i]) {
                placed[i] = 1;
                sequence.push_back(i);
            }
        }
    }
    for (const std::size_t i : path_order(volume))
        if (!placed[i]) sequence.push_back(i);
    if (!missing.empty()) {
        std::string first;
        for (std::size_t k = 0; k < std::min<std::size_t>(missing.size(), 3); ++k)
            first += (k == 0 ? "" : ", ") + missing[k];
        notes.push_back("the trace names " + std::to_string(missing.size()) +
                        " paths that are no file of the volume (first: " + first +
                        "); the files it does name are "
                        "placed in its order");
    }
    return sequence;
}

}  // namespace

Builder::Builder(const VolumeMap& volume, const std::vector<Layer>& layers, const PlanOptions& options,
                 Plan& plan)
    : volume_(volume),
      options_(options),
      plan_(plan),
      growth_(volume, layers, options.granule),
      order_(effective_order(options)) {
    if (!order_ || order_->kind == PlacementOrder::Kind::Size) return;
    switch (order_->kind) {
        case PlacementOrder::Kind::Mft:
            // The map is sorted by (record, type, name): its own order.
            sequence_.resize(volume.streams.size());
            std::iota(sequence_.begin(), sequence_.end(), std::size_t{0});
            break;
        case PlacementOrder::Kind::Path:
            sequence_ = path_order(volume);
            break;
        case PlacementOrder::Kind::Trace:
            if (!options.trace_paths)
                throw Error(ErrorKind::Internal, "trace order without the trace's paths (load_trace first)");
            sequence_ = trace_sequence(volume, *options.trace_paths, plan.notes);
            break;
        case PlacementOrder::Kind::Size:
            break;
    }
    rank_.resize(volume.streams.size());
    for (std::size_t r = 0; r < sequence_.size(); ++r) rank_[sequence_[r]] = r;
}

std::optional<std::string> Builder::excluded_by(const Stream& stream) const {
    if (options_.exclude.empty()) return std::nullopt;
    const std::string path = volume_.path_of(stream.mft_record);
    for (const std::string& glob : options_.exclude)
        if (path_matches(glob, path)) return glob;
    return std::nullopt;
}

bool Builder::over_moved_budget(std::int64_t clusters) const {
    if (!options_.max_moved) return false;
    const std::uint64_t bytes = static_cast<std::uint64_t>(clusters) * volume_.cluster_size;
    return bytes > *options_.max_moved || moved_bytes_ > *options_.max_moved - bytes;
}

std::string Builder::moved_budget_reason() const {
    return "--max-moved budget of " + bytes_text(options_.max_moved.value_or(0)) + " reached (" +
           bytes_text(moved_bytes_) + " moved)";
}

std::optional<std::string> Builder::over_growth_budget(std::int64_t lcn, std::int64_t clusters) const {
    if (!options_.max_growth) return std::nullopt;
    const GrowthFigures add = growth_.would_add(lcn, clusters);
    const std::uint64_t more = add.thin_growth_bytes + add.clone_delta_growth_bytes;
    const GrowthFigures& now = growth_.total();
    const std::uint64_t used = now.thin_growth_bytes + now.clone_delta_growth_bytes;
    const std::uint64_t budget = *options_.max_growth;
    if (used + more <= budget) return std::nullopt;
    return "would grow the top layer by " + bytes_text(more) + ", past the --max-growth budget (" +
           bytes_text(budget > used ? budget - used : 0) + " left)";
}

void Builder::move_whole(const Stream& stream, std::span<const Piece> pieces, std::int64_t destination) {
    std::int64_t to = destination;
    for (const Piece& p : pieces) {
        move_part(stream, p.vcn, p.lcn, to, p.clusters);
        to += p.clusters;
    }
}

void Builder::move_part(const Stream& stream, std::int64_t vcn, std::int64_t from, std::int64_t destination,
                        std::int64_t clusters) {
    plan_.moves.push_back({stream.mft_record, stream.label(), vcn, from, destination, clusters});
    // The running total serves the budget alone: the plan's growth is summarize_plan's, from
    // its destinations in disk order, and a write here is a descent at a random place.
    if (options_.max_growth) growth_.write(destination, clusters);
    moved_bytes_ += static_cast<std::uint64_t>(clusters) * volume_.cluster_size;
}

void Builder::skip(const Stream& stream, std::string reason) {
    plan_.skipped.push_back({stream.mft_record, stream.label(), std::move(reason)});
}

std::vector<std::pair<std::uint64_t, std::string>> streams_in(const std::vector<Move>& moves,
                                                              std::size_t from) {
    std::vector<std::pair<std::uint64_t, std::string>> out;
    for (std::size_t i = from; i < moves.size(); ++i)
        if (i == from || moves[i].mft_record != moves[i - 1].mft_record ||
            moves[i].stream != moves[i - 1].stream)
            out.emplace_back(moves[i].mft_record, moves[i].stream);
    return out;
}

std::string bytes_text(std::uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace guestfrag::planner
