// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "app/gui/cluster_cells.hpp"
#include "app/gui/extent_index.hpp"

namespace guestfrag::gui {

/// What the cluster map draws for one volume state at one zoom.
struct MapCells {
    std::shared_ptr<const VolumeMap> volume;
    std::shared_ptr<const std::vector<Layer>> layers;
    ClusterCells cells;
    LayerCells layer_cells;
    ExtentIndex index;

    /// Computes everything for `volume` at `clusters_per_cell` (0: the default zoom,
    /// kDefaultMapCells cells). O(runs · log runs + cells).
    static MapCells compute(std::shared_ptr<const VolumeMap> volume, std::shared_ptr<const std::vector<Layer>> layers,
                            std::int64_t clusters_per_cell);
};

/// Cells the map shows by default: fine enough to see fragmentation, coarse enough to paint fast.
inline constexpr std::int64_t kDefaultMapCells = 24'000;

}  // namespace guestfrag::gui
