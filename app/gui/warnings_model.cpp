// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/warnings_model.hpp"

#include <QApplication>
#include <QStyle>

#include "app/gui/files_model.hpp"

namespace guestfrag::gui {

namespace {

QStyle::StandardPixmap icon_of(Severity severity) {
    switch (severity) {
        case Severity::Critical: return QStyle::SP_MessageBoxCritical;
        case Severity::Warning: return QStyle::SP_MessageBoxWarning;
        case Severity::Info: break;
    }
    return QStyle::SP_MessageBoxInformation;
}

}  // namespace

WarningsModel::WarningsModel(QObject* parent) : QAbstractTableModel(parent) {}

void WarningsModel::set_warnings(std::vector<ImpactWarning> warnings) {
    beginResetModel();
    warnings_ = std::move(warnings);
    endResetModel();
}

int WarningsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(warnings_.size());
}

int WarningsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant WarningsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const ImpactWarning& w = warnings_[static_cast<std::size_t>(index.row())];
    if (role == Qt::DecorationRole && index.column() == SeverityColumn)
        return QApplication::style()->standardIcon(icon_of(w.severity));
    if (role == Qt::ToolTipRole) return QString::fromStdString(w.message);
    if (role == Qt::TextAlignmentRole && index.column() == Bytes) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
        case SeverityColumn: return QString::fromUtf8(severity_name(w.severity).data(), static_cast<qsizetype>(severity_name(w.severity).size()));
        case Code: return QString::fromStdString(w.code);
        case Bytes: return size_text(w.bytes);
        case Message: return QString::fromStdString(w.message);
        default: return {};
    }
}

QVariant WarningsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case SeverityColumn: return tr("Severity");
        case Code: return tr("Code");
        case Bytes: return tr("At stake");
        case Message: return tr("What happens");
        default: return {};
    }
}

}  // namespace guestfrag::gui
