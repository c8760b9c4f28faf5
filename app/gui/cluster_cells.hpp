// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag::gui {

/// What a cluster of the volume holds, as the cluster map colours it. Declared in order of
/// precedence: a cell whose clusters split evenly between two states shows the earlier one,
/// so rare but important clusters (the MFT, pinned metadata) are not hidden by ties.
enum class CellState : std::uint8_t {
    Mft,         ///< $MFT's unnamed $DATA
    Metadata,    ///< unmovable (docs/design.md §3), or in use by nothing a stream maps
    Excluded,    ///< pagefile, hiberfil, VSS store: movable but left alone
    Fragmented,  ///< a movable stream with more than one fragment
    Contiguous,  ///< a movable stream in one fragment
    MftZone,     ///< free, inside the reserved MFT zone
    Free,        ///< free, outside the MFT zone
};
inline constexpr std::size_t kCellStates = 7;
/// "MFT", "metadata / unmovable", ... for legends and tooltips.
[[nodiscard]] std::string_view cell_state_name(CellState state) noexcept;

/// Where the data under a cluster lives in the image's layers (the layer overlay).
enum class LayerState : std::uint8_t {
    TopLayer,     ///< allocated in the image that was opened (depth 0)
    ParentLayer,  ///< allocated only in a parent (backing) layer
    Unallocated,  ///< allocated in no layer: reads as zero, costs no storage
};
inline constexpr std::size_t kLayerStates = 3;
[[nodiscard]] std::string_view layer_state_name(LayerState state) noexcept;

/// Every cluster of `volume` in exactly one CellState: the sets are disjoint and their union
/// is [0, total_clusters). Pure. O(runs · log runs).
[[nodiscard]] std::array<ClusterSet, kCellStates> classify_clusters(const VolumeMap& volume);

/// The volume cut into cells of `clusters_per_cell` clusters (the last may be shorter), each
/// with its dominant state: the one covering most of its clusters. Plain data computed once
/// from finished core results; the cluster map widget only draws it.
/// Cost: O(runs · log runs + cells); memory kCellStates counters per cell while building.
template <typename State, std::size_t N>
class DominantCells {
public:
    DominantCells() = default;
    [[nodiscard]] std::size_t size() const noexcept { return states_.size(); }
    [[nodiscard]] std::int64_t clusters_per_cell() const noexcept { return clusters_per_cell_; }
    [[nodiscard]] std::int64_t total_clusters() const noexcept { return total_clusters_; }
    [[nodiscard]] State state(std::size_t cell) const { return states_.at(cell); }
    [[nodiscard]] std::span<const State> states() const noexcept { return states_; }
    /// Cells whose dominant state is `state`.
    [[nodiscard]] std::size_t cells_in(State state) const { return cells_[static_cast<std::size_t>(state)]; }
    /// Units in `state` over the whole volume: clusters for ClusterCells, bytes for LayerCells.
    [[nodiscard]] std::int64_t units_in(State state) const { return units_[static_cast<std::size_t>(state)]; }
    /// [first, end) clusters of `cell`.
    [[nodiscard]] std::pair<std::int64_t, std::int64_t> cluster_range(std::size_t cell) const;
    /// The cell holding `cluster`.
    [[nodiscard]] std::size_t cell_of(std::int64_t cluster) const {
        return static_cast<std::size_t>(cluster / clusters_per_cell_);
    }

protected:
    /// Sizes the grid; the caller then adds every unit exactly once with add() and calls finish().
    void start(std::int64_t total_clusters, std::int64_t clusters_per_cell, std::int64_t units_per_cluster);
    /// Counts units [lower, upper) (in units_per_cluster per cluster) as `state`.
    void add(std::int64_t lower, std::int64_t upper, State state);
    void finish();

private:
    std::int64_t total_clusters_ = 0;
    std::int64_t clusters_per_cell_ = 1;
    std::int64_t units_per_cluster_ = 1;
    std::vector<std::array<std::int64_t, N>> counts_;  // only while building
    std::vector<State> states_;
    std::array<std::size_t, N> cells_{};
    std::array<std::int64_t, N> units_{};
};

/// Cells coloured by CellState. Throws Error(Internal) for clusters_per_cell < 1.
class ClusterCells : public DominantCells<CellState, kCellStates> {
public:
    ClusterCells() = default;
    ClusterCells(const VolumeMap& volume, std::int64_t clusters_per_cell);
};

/// Cells coloured by LayerState: the volume's clusters mapped onto the virtual disk through
/// VolumeMap::partition_offset and cluster_size, against each layer's allocated bytes
/// (`layers` top first, as DiskImage::layers). Counting is in bytes, so a granule smaller
/// than a cluster still weighs what it covers. Throws Error(Internal) for clusters_per_cell < 1.
class LayerCells : public DominantCells<LayerState, kLayerStates> {
public:
    LayerCells() = default;
    LayerCells(const VolumeMap& volume, const std::vector<Layer>& layers, std::int64_t clusters_per_cell);
};

/// A clusters-per-cell that keeps the map near `target_cells` cells (at least 1).
[[nodiscard]] std::int64_t clusters_per_cell_for(std::int64_t total_clusters, std::int64_t target_cells);

}  // namespace guestfrag::gui
