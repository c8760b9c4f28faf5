// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/files_model.hpp"

#include "pipeline/sizes.hpp"

namespace guestfrag::gui {

QString size_text(std::uint64_t bytes) { return QString::fromStdString(format_size(bytes)); }

FilesModel::FilesModel(QObject* parent) : QAbstractTableModel(parent) {}

void FilesModel::set_volume(std::shared_ptr<const VolumeMap> volume) {
    std::vector<FileRow> rows = volume ? file_rows(*volume) : std::vector<FileRow>();
    set_volume(std::move(volume), std::move(rows));
}

void FilesModel::set_volume(std::shared_ptr<const VolumeMap> volume, std::vector<FileRow> rows) {
    beginResetModel();
    volume_ = std::move(volume);
    rows_ = std::move(rows);
    endResetModel();
}

int FilesModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int FilesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant FilesModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const FileRow& row = rows_[static_cast<std::size_t>(index.row())];
    if (role == kStreamIndexRole) return QVariant::fromValue<qulonglong>(static_cast<qulonglong>(index.row()));
    if (role == Qt::TextAlignmentRole)
        return index.column() >= Size ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    if (role != Qt::DisplayRole && role != kSortRole) return {};
    switch (index.column()) {
        case Path: return row.path;
        case StreamLabel: return row.label;
        case Size: return role == kSortRole ? QVariant::fromValue<qulonglong>(row.size) : QVariant(size_text(row.size));
        case Fragments: return QVariant::fromValue<qulonglong>(row.fragments);
        case Extents: return QVariant::fromValue<qulonglong>(row.extents);
        default: return {};
    }
}

QVariant FilesModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Path: return tr("Path");
        case StreamLabel: return tr("Stream");
        case Size: return tr("Size");
        case Fragments: return tr("Fragments");
        case Extents: return tr("Extents");
        default: return {};
    }
}

}  // namespace guestfrag::gui
