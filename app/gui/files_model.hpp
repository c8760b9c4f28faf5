// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <QAbstractTableModel>
#include <QString>

#include "app/gui/volume_view.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag::gui {

/// The files table: one row per stream of a VolumeMap (path via VolumeMap::path_of, stream
/// label, size, fragments, extents). Thin: it adapts a finished map it shares and never
/// changes it. Qt::DisplayRole gives text; kSortRole gives numbers for sorting.
/// Rows are kept as text (file_rows()).
class FilesModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Path, StreamLabel, Size, Fragments, Extents, ColumnCount };
    static constexpr int kSortRole = Qt::UserRole;
    /// The row's index into VolumeMap::streams.
    static constexpr int kStreamIndexRole = Qt::UserRole + 1;

    explicit FilesModel(QObject* parent = nullptr);

    /// Shows the streams of `volume` (nullptr: none), building its rows here.
    void set_volume(std::shared_ptr<const VolumeMap> volume);
    /// Shows `volume` with `rows` = file_rows(*volume) built elsewhere (a worker thread).
    void set_volume(std::shared_ptr<const VolumeMap> volume, std::vector<FileRow> rows);
    [[nodiscard]] const VolumeMap* volume() const { return volume_.get(); }

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::shared_ptr<const VolumeMap> volume_;
    std::vector<FileRow> rows_;
};

/// "1.50 MiB": sizes as the CLI prints them.
[[nodiscard]] QString size_text(std::uint64_t bytes);

}  // namespace guestfrag::gui
