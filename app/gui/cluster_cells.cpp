// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/cluster_cells.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace guestfrag::gui {

namespace {

using ClusterInterval = boost::icl::interval<std::int64_t>;
using ByteInterval = boost::icl::interval<std::uint64_t>;

}  // namespace

std::string_view cell_state_name(CellState state) noexcept {
    switch (state) {
        case CellState::Mft: return "MFT";
        case CellState::Metadata: return "metadata / unmovable";
        case CellState::Excluded: return "excluded (pagefile, hiberfil, VSS)";
        case CellState::Fragmented: return "fragmented file";
        case CellState::Contiguous: return "contiguous file";
        case CellState::MftZone: return "free, MFT zone";
        case CellState::Free: return "free";
    }
    return "?";
}

std::string_view layer_state_name(LayerState state) noexcept {
    switch (state) {
        case LayerState::TopLayer: return "top layer";
        case LayerState::ParentLayer: return "parent layer";
        case LayerState::Unallocated: return "unallocated";
    }
    return "?";
}

std::array<ClusterSet, kCellStates> classify_clusters(const VolumeMap& volume) {
    ClusterSet all;
    if (volume.total_clusters > 0) all += ClusterInterval::right_open(0, volume.total_clusters);

    ClusterSet mft, pinned, excluded, fragmented, contiguous;
    for (const Stream& s : volume.streams) {
        ClusterSet* target = &contiguous;
        if (s.mft_record == 0 && s.type == static_cast<std::uint32_t>(AttrType::Data) && s.name.empty())
            target = &mft;
        else if (s.placement == Placement::Unmovable)
            target = &pinned;
        else if (s.placement == Placement::Excluded)
            target = &excluded;
        else if (s.fragments() > 1)
            target = &fragmented;
        for (const Extent& e : s.extents)
            if (e.lcn != Extent::kSparse && e.clusters > 0) *target += ClusterInterval::right_open(e.lcn, e.lcn + e.clusters);
    }
    pinned += volume.unmovable;

    // Earlier states win where sets overlap (the unmovable set also covers $MFT's first
    // extent, for instance), so each cluster is counted once.
    std::array<ClusterSet, kCellStates> out;
    ClusterSet taken;
    auto take = [&](ClusterSet set) {
        set &= all;
        set -= taken;
        taken += set;
        return set;
    };
    out[static_cast<std::size_t>(CellState::Mft)] = take(std::move(mft));
    out[static_cast<std::size_t>(CellState::Metadata)] = take(std::move(pinned));
    out[static_cast<std::size_t>(CellState::Excluded)] = take(std::move(excluded));
    out[static_cast<std::size_t>(CellState::Fragmented)] = take(std::move(fragmented));
    out[static_cast<std::size_t>(CellState::Contiguous)] = take(std::move(contiguous));
    ClusterSet free = take(volume.free);
    out[static_cast<std::size_t>(CellState::MftZone)] = free & volume.mft_zone;
    out[static_cast<std::size_t>(CellState::Free)] = free - volume.mft_zone;
    // In use by $Bitmap but mapped by no non-resident stream (boot sector backup, ...).
    out[static_cast<std::size_t>(CellState::Metadata)] += all - taken;
    return out;
}

template <typename State, std::size_t N>
std::pair<std::int64_t, std::int64_t> DominantCells<State, N>::cluster_range(std::size_t cell) const {
    const std::int64_t first = static_cast<std::int64_t>(cell) * clusters_per_cell_;
    return {first, std::min(first + clusters_per_cell_, total_clusters_)};
}

template <typename State, std::size_t N>
void DominantCells<State, N>::start(std::int64_t total_clusters, std::int64_t clusters_per_cell,
                                    std::int64_t units_per_cluster) {
    if (clusters_per_cell < 1 || units_per_cluster < 1 || total_clusters < 0)
        throw Error(ErrorKind::Internal, "cluster map: a cell must cover at least one cluster");
    total_clusters_ = total_clusters;
    clusters_per_cell_ = clusters_per_cell;
    units_per_cluster_ = units_per_cluster;
    const auto cells = static_cast<std::size_t>((total_clusters + clusters_per_cell - 1) / clusters_per_cell);
    counts_.assign(cells, {});
    states_.clear();
    cells_ = {};
    units_ = {};
}

template <typename State, std::size_t N>
void DominantCells<State, N>::add(std::int64_t lower, std::int64_t upper, State state) {
    const auto index = static_cast<std::size_t>(state);
    const std::int64_t span = clusters_per_cell_ * units_per_cluster_;
    lower = std::max<std::int64_t>(lower, 0);
    upper = std::min(upper, total_clusters_ * units_per_cluster_);
    if (lower >= upper) return;
    units_[index] += upper - lower;
    while (lower < upper) {
        const std::int64_t cell = lower / span;
        const std::int64_t take = std::min(upper, (cell + 1) * span) - lower;
        counts_[static_cast<std::size_t>(cell)][index] += take;
        lower += take;
    }
}

template <typename State, std::size_t N>
void DominantCells<State, N>::finish() {
    states_.reserve(counts_.size());
    for (const auto& counts : counts_) {
        // max_element returns the first maximum: ties go to the earlier (more important) state.
        const auto best = static_cast<std::size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
        states_.push_back(static_cast<State>(best));
        ++cells_[best];
    }
    counts_.clear();
    counts_.shrink_to_fit();
}

template class DominantCells<CellState, kCellStates>;
template class DominantCells<LayerState, kLayerStates>;

ClusterCells::ClusterCells(const VolumeMap& volume, std::int64_t clusters_per_cell) {
    start(volume.total_clusters, clusters_per_cell, 1);
    const auto sets = classify_clusters(volume);
    for (std::size_t i = 0; i < kCellStates; ++i)
        for (const auto& interval : sets[i])
            add(interval.lower(), interval.upper(), static_cast<CellState>(i));
    finish();
}

LayerCells::LayerCells(const VolumeMap& volume, const std::vector<Layer>& layers, std::int64_t clusters_per_cell) {
    const auto cluster_size = static_cast<std::int64_t>(std::max<std::uint32_t>(volume.cluster_size, 1));
    start(volume.total_clusters, clusters_per_cell, cluster_size);
    const std::uint64_t first = volume.partition_offset;
    const std::uint64_t end = first + static_cast<std::uint64_t>(volume.total_clusters) * static_cast<std::uint64_t>(cluster_size);
    ByteSet whole;
    if (end > first) whole += ByteInterval::right_open(first, end);

    ByteSet top, parents;
    if (!layers.empty()) top = layers.front().allocated & whole;
    for (std::size_t depth = 1; depth < layers.size(); ++depth) parents += layers[depth].allocated;
    parents &= whole;
    parents -= top;
    const ByteSet unallocated = whole - top - parents;

    auto add_bytes = [&](const ByteSet& set, LayerState state) {
        for (const auto& interval : set)
            add(static_cast<std::int64_t>(interval.lower() - first), static_cast<std::int64_t>(interval.upper() - first),
                state);
    };
    add_bytes(top, LayerState::TopLayer);
    add_bytes(parents, LayerState::ParentLayer);
    add_bytes(unallocated, LayerState::Unallocated);
    finish();
}

std::int64_t clusters_per_cell_for(std::int64_t total_clusters, std::int64_t target_cells) {
    if (target_cells < 1) target_cells = 1;
    return std::max<std::int64_t>(1, (total_clusters + target_cells - 1) / target_cells);
}

}  // namespace guestfrag::gui
