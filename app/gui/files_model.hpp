// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <QAbstractTableModel>
#include <QString>

#include "core/model/volume_map.hpp"

namespace guestfrag::gui {

/// The files table: one row per stream of a VolumeMap (path via VolumeMap::path_of, stream
/// label, size, fragments, extents). Thin: it adapts a finished map it shares and never
/// changes it. Qt::DisplayRole gives text; kSortRole gives numbers for sorting, and paths
/// for sorting and filtering.
/// Lazy: a row's text is made when it is shown, from the map. Only sorting or filtering by
/// path needs every path; the first such request makes them all once (on the GUI thread),
/// so a table nobody sorts or filters by path costs nothing beside the map.
class FilesModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Path, StreamLabel, Size, Fragments, Extents, ColumnCount };
    static constexpr int kSortRole = Qt::UserRole;
    /// The row's index into VolumeMap::streams.
    static constexpr int kStreamIndexRole = Qt::UserRole + 1;

    explicit FilesModel(QObject* parent = nullptr);

    /// Shows the streams of `volume` (nullptr: none).
    void set_volume(std::shared_ptr<const VolumeMap> volume);
    [[nodiscard]] const VolumeMap* volume() const { return volume_.get(); }

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const VolumeMap> volume_;
    /// Every row's path, made on the first request that needs them all (empty until then).
    mutable std::vector<QString> paths_;
};

/// "1.50 MiB": sizes as the CLI prints them.
[[nodiscard]] QString size_text(std::uint64_t bytes);

}  // namespace guestfrag::gui
