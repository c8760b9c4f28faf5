// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
#include <string>
#include <vector>

#include <QAbstractTableModel>
#include <QString>

class QTableView;

#include "pipeline/pipeline.hpp"

namespace guestfrag::gui {

/// One figure of the "Eager, lazy and thin" table: as IoStats and throughput() give it,
/// and as the CLI's text prints it.
struct ProvisionedCell {
    double value = 0;
    QString text;
};

/// One row of the table: the CLI's row label ("IOs", "HDD time", ...) and its figure on
/// eager, lazy and thin storage, in IoStats::provisioned's order.
struct ProvisionedRow {
    QString label;
    std::array<ProvisionedCell, 3> cells;
};

/// The rows of `estimate`'s "Eager, lazy and thin" block for `stats` (docs/estimate.md
/// §8.2): IOs, first writes, then per device model (HDD, SSD, array) the device time, IOPS,
/// MB/s and mean latency, from throughput(). Pure formatting: computes nothing new.
[[nodiscard]] std::vector<ProvisionedRow> provisioned_rows(const IoStats& stats);

/// A duration as the CLI's estimate text prints it: "12.3 ms" below 1 s, "4.56 s" below
/// 600 s, "12.5 min" above.
[[nodiscard]] QString estimate_seconds_text(double seconds);

/// A queue-depth-1 latency as the CLI's estimate text prints it: below 1 ms in µs with one
/// decimal ("85.3 µs"; the CLI writes "us"), otherwise estimate_seconds_text.
[[nodiscard]] QString latency_text(double seconds);

/// "Eager, lazy and thin" figures as a table: a row per ProvisionedRow (row labels in the
/// vertical header) and a column per provisioning type of each state shown. set_estimate
/// shows `estimate`'s blocks of one volume estimate, before and after the plan when there is
/// one; set_stats shows one IoStats alone (the plan's own IO, PlanWrites::stats), its columns
/// titled by the type only. The header of the disk's own type says "(this disk)" and its
/// cells are bold.
class ProvisionedModel : public QAbstractTableModel {
    Q_OBJECT
public:
    /// Qt::UserRole: the cell's figure as a double (ProvisionedCell::value).
    static constexpr int kValueRole = Qt::UserRole;

    explicit ProvisionedModel(QObject* parent = nullptr);

    /// Shows `estimate`: states "before" and, with a plan, "after"; the disk's type is
    /// VolumeEstimate::provisioning (nullptr: an empty table).
    void set_estimate(const VolumeEstimate* estimate);
    /// Shows `stats` as three columns without a state; `disk` is the disk's own type
    /// (nullptr: an empty table).
    void set_stats(const IoStats* stats, Provisioning disk);

    [[nodiscard]] int rowCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] int columnCount(const QModelIndex& parent = {}) const override;
    [[nodiscard]] QVariant data(const QModelIndex& index, int role) const override;
    [[nodiscard]] QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    /// What column `column` shows: its state ("before", "after"; empty for set_stats) and
    /// its provisioning type.
    [[nodiscard]] QString state(int column) const;
    [[nodiscard]] Provisioning type(int column) const { return types_[static_cast<std::size_t>(column % 3)]; }
    /// The column's header: the state and `separator` when there is one, the type, and
    /// " (this disk)" on the disk's own type ("before, thin (this disk)"; the header puts a
    /// line break between state and type).
    [[nodiscard]] QString column_title(int column, const QString& separator = QStringLiteral(", ")) const;

private:
    struct State {
        QString name;
        std::vector<ProvisionedRow> rows;
    };
    /// Resets to `states` (each of provisioned_rows' three columns), typed by `stats`.
    void show(std::vector<State> states, const IoStats& stats, Provisioning disk);

    std::vector<State> states_;
    std::array<Provisioning, 3> types_{Provisioning::Eager, Provisioning::Lazy, Provisioning::Thin};
    Provisioning disk_ = Provisioning::Eager;
};

/// A view of `model` as the GUI shows its "Eager, lazy and thin" tables: fixed rows one
/// text line high (14 rows must fit a short tab), `tooltip` saying what the figures are.
/// The caller owns the view (a layout takes it).
[[nodiscard]] QTableView* provisioned_view(ProvisionedModel* model, const QString& tooltip);

/// How wide `view` must be to show every column without a horizontal scroll bar: row
/// labels, columns, the vertical scroll bar and the frame.
[[nodiscard]] int full_table_width(const QTableView& view);

}  // namespace guestfrag::gui
