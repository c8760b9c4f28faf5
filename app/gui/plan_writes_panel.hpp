// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QStringList>
#include <QWidget>

#include "app/gui/session.hpp"

class QLabel;
class QTableView;

namespace guestfrag::gui {

class ProvisionedModel;

/// The title of `impact`'s "Carrying out the plan" section, as the CLI's impact text heads
/// it: "Carrying out the plan: its moves' reads and writes, in IOs of at most 1.00 MiB".
[[nodiscard]] QString plan_writes_caption(const PlanWrites& writes);

/// The section's figures beside its table, one line per CLI row, each worded as `impact`
/// prints it (app/cli/impact_text.cpp), what the CLI adds after a figure in brackets: "IOs
/// of the plan N (R reads, W writes)", "data read X · data written Y", "provisioning TYPE,
/// zeroing block Z: BASIS", "into written blocks X (their zeroing block already written)",
/// "into new blocks Y (N first writes of a Z block)". Pure formatting.
[[nodiscard]] QStringList plan_writes_lines(const PlanWrites& writes);

/// The plan's own IO (docs/impact.md §10): its caption, plan_writes_lines and its IoStats
/// on eager, lazy and thin storage (ProvisionedModel::set_stats, the disk's own type marked);
/// when the impact failed, why instead. Draws what PlanResult holds; computes nothing.
class PlanWritesPanel : public QWidget {
    Q_OBJECT
public:
    explicit PlanWritesPanel(QWidget* parent = nullptr);
    /// Shows `result`'s Impact::plan_writes, or its impact_error (nullptr, or no impact
    /// assessed yet: nothing).
    void show_result(const PlanResult* result);
    [[nodiscard]] ProvisionedModel* model() const { return model_; }
    [[nodiscard]] QTableView* view() const { return view_; }
    [[nodiscard]] QString caption() const;
    /// The figures' label text: plan_writes_lines joined by line breaks, or the error.
    [[nodiscard]] QString details() const;
    /// The width the table needs to show every column without scrolling sideways.
    [[nodiscard]] int table_width() const;

private:
    QLabel* caption_;
    QLabel* details_;
    ProvisionedModel* model_;
    QTableView* view_;
};

}  // namespace guestfrag::gui
