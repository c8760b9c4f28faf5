// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/volume_view.hpp"

namespace guestfrag::gui {

MapCells MapCells::compute(std::shared_ptr<const VolumeMap> volume, std::shared_ptr<const std::vector<Layer>> layers,
                           std::int64_t clusters_per_cell) {
    MapCells out;
    out.volume = std::move(volume);
    out.layers = std::move(layers);
    if (!out.volume) return out;
    if (clusters_per_cell < 1) clusters_per_cell = clusters_per_cell_for(out.volume->total_clusters, kDefaultMapCells);
    static const std::vector<Layer> no_layers;
    out.cells = ClusterCells(*out.volume, clusters_per_cell);
    out.layer_cells = LayerCells(*out.volume, out.layers ? *out.layers : no_layers, clusters_per_cell);
    out.index = ExtentIndex(*out.volume);
    return out;
}

}  // namespace guestfrag::gui
