// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <QString>

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

/// One row of the files table, as text and numbers.
struct FileRow {
    QString path;
    QString label;
    std::uint64_t size = 0;
    std::uint64_t fragments = 0;
    std::uint64_t extents = 0;
};

/// The rows of `volume`'s streams, in VolumeMap::streams order. O(streams · (extents +
/// depth · log files)): 200k streams take a noticeable fraction of a second, so the window
/// builds them on the worker thread with the analysis.
[[nodiscard]] std::vector<FileRow> file_rows(const VolumeMap& volume);

/// Everything the window shows for a volume that takes time to build, made on a worker
/// thread and handed to the GUI thread by value (QString is implicitly shared and safe
/// to move between threads).
struct VolumeView {
    MapCells map;
    std::vector<FileRow> rows;
};

}  // namespace guestfrag::gui
