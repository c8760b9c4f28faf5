// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <vector>

#include <QAbstractTableModel>

#include "core/impact/impact.hpp"

namespace guestfrag::gui {

/// Impact::warnings as a table: severity (with the QStyle standard icon), code, bytes at
/// stake, message. Keeps a copy of the warnings it was given; thin otherwise.
class WarningsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { SeverityColumn, Code, Bytes, Message, ColumnCount };

    explicit WarningsModel(QObject* parent = nullptr);
    void set_warnings(std::vector<ImpactWarning> warnings);
    [[nodiscard]] const std::vector<ImpactWarning>& warnings() const { return warnings_; }

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<ImpactWarning> warnings_;
};

}  // namespace guestfrag::gui
