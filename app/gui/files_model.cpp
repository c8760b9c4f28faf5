// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/files_model.hpp"

#include <algorithm>

#include "pipeline/sizes.hpp"

namespace guestfrag::gui {

QString size_text(std::uint64_t bytes) { return QString::fromStdString(format_size(bytes)); }

FilesModel::FilesModel(QObject* parent) : QAbstractTableModel(parent) {}

void FilesModel::set_volume(std::shared_ptr<const VolumeMap> volume) {
    beginResetModel();
    volume_ = std::move(volume);
    paths_.clear();
    paths_.shrink_to_fit();
    endResetModel();
}

int FilesModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !volume_ ? 0 : static_cast<int>(volume_->streams.size());
}

int FilesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant FilesModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const auto row = static_cast<std::size_t>(index.row());
    const Stream& s = volume_->streams[row];
    if (role == kStreamIndexRole) return QVariant::fromValue<qulonglong>(static_cast<qulonglong>(row));
    if (role == Qt::TextAlignmentRole)
        return index.column() >= Size ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    if (role != Qt::DisplayRole && role != kSortRole) return {};
    switch (index.column()) {
        case Path:
            if (role == kSortRole && paths_.empty()) {
                paths_.reserve(volume_->streams.size());
                for (const Stream& each : volume_->streams)
                    paths_.push_back(QString::fromStdString(volume_->path_of(each.mft_record)));
            }
            return paths_.empty() ? QString::fromStdString(volume_->path_of(s.mft_record)) : paths_[row];
        case StreamLabel: return QString::fromStdString(s.label());
        case Size: return role == kSortRole ? QVariant::fromValue<qulonglong>(s.size) : QVariant(size_text(s.size));
        case Fragments: return QVariant::fromValue<qulonglong>(s.fragments());
        case Extents:
            return QVariant::fromValue<qulonglong>(static_cast<qulonglong>(std::ranges::count_if(
                s.extents, [](const Extent& e) { return e.lcn != Extent::kSparse; })));
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
