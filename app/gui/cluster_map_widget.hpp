// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <QColor>
#include <QString>
#include <QWidget>

#include "app/gui/cluster_cells.hpp"
#include "app/gui/extent_index.hpp"
#include "app/gui/map_legend.hpp"
#include "app/gui/volume_view.hpp"

namespace guestfrag::gui {

/// How the cluster map colours its cells.
enum class MapMode { Allocation, Layers };

[[nodiscard]] QColor cell_colour(CellState state);
[[nodiscard]] QColor layer_colour(LayerState state);
/// The legend of `mode`: a colour and a name per state, with its cell count.
[[nodiscard]] std::vector<MapLegend::Entry> legend_entries(MapMode mode, const ClusterCells& cells,
                                                          const LayerCells& layers);

/// Draws a volume as a grid of cells (ClusterCells / LayerCells do the counting; this only
/// paints), row by row, as many columns as fit the width. Hovering a cell shows its cluster
/// range and the files in it; highlight_stream() outlines one stream's cells. Shares the
/// VolumeMap and layers it shows.
class ClusterMapWidget : public QWidget {
    Q_OBJECT
public:
    explicit ClusterMapWidget(QWidget* parent = nullptr);

    /// Shows `volume` (nullptr: nothing) with the image's `layers` for the overlay; keeps the
    /// clusters per cell when `keep_zoom` and it was set for a volume of the same size.
    /// Computes the cells here (see MapCells::compute for the cost).
    void show_volume(std::shared_ptr<const VolumeMap> volume, std::shared_ptr<const std::vector<Layer>> layers,
                     bool keep_zoom);
    /// Shows cells computed elsewhere (a worker thread).
    void show_cells(MapCells cells);
    void set_clusters_per_cell(std::int64_t clusters_per_cell);
    void set_cell_pixels(int pixels);
    void set_mode(MapMode mode);
    /// Outlines the cells holding stream `index` of the shown VolumeMap (nullopt: none).
    void highlight_stream(std::optional<std::size_t> index);

    [[nodiscard]] const ClusterCells& cells() const { return shown_.cells; }
    [[nodiscard]] const LayerCells& layer_cells() const { return shown_.layer_cells; }
    [[nodiscard]] std::int64_t clusters_per_cell() const { return shown_.cells.clusters_per_cell(); }
    [[nodiscard]] MapMode mode() const { return mode_; }
    /// Cells outlined by highlight_stream().
    [[nodiscard]] std::size_t highlighted_cells() const;

signals:
    /// The grid was recomputed (new volume or zoom).
    void cellsChanged();
    /// A cell was clicked; `stream` is the first stream (index into VolumeMap::streams)
    /// with data in it.
    void streamClicked(std::size_t stream);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    void cells_replaced();
    void update_height();
    [[nodiscard]] int columns() const;
    [[nodiscard]] std::optional<std::size_t> cell_at(QPoint pos) const;
    [[nodiscard]] QString tooltip_for(std::size_t cell) const;

    MapCells shown_;
    std::vector<bool> highlighted_;
    int cell_pixels_ = 6;
    MapMode mode_ = MapMode::Allocation;
};

}  // namespace guestfrag::gui
