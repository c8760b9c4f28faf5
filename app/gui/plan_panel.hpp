// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <string>

#include <QWidget>

#include "app/gui/session.hpp"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace guestfrag::gui {

/// The plan's settings (strategy, placement order, budgets, dedup chunk sizes, workload) and a summary of
/// the last plan. Reads its fields into a PlanRequest; the window adds the storage and runs it.
class PlanPanel : public QWidget {
    Q_OBJECT
public:
    explicit PlanPanel(QWidget* parent = nullptr);

    /// The request the fields describe, or nullopt after showing the user what is wrong.
    [[nodiscard]] std::optional<PlanRequest> request(QString* error) const;
    /// Chooses the strategy, as the user would (later suggestions do not override it).
    void set_strategy(const std::string& name);
    /// Shows `strategy` as the recommended one unless the user chose one.
    void suggest_strategy(Strategy strategy);
    /// Takes the verdict's plan (its strategy and order) as the one shown, unless the user
    /// chose a strategy or an order; true when that changed the fields.
    bool adopt_verdict_plan(Strategy strategy, const std::string& order);
    /// Where the verdict puts the plan shown, and the storage warnings it raises, under the
    /// buttons (plain text; "" clears it).
    void show_judgement(const QString& text);
    void set_busy(bool busy);
    /// Enables "Apply to a copy…" (the window knows when a plan with moves can be applied).
    void set_apply_enabled(bool enabled);
    [[nodiscard]] QPushButton* apply_button() const { return apply_button_; }
    /// Shows the summary of `result` (nullptr: clears it).
    void show_result(const PlanResult* result, const VolumeAnalysis* before);

signals:
    void planRequested();
    void applyRequested();

private:
    QComboBox* strategy_;
    QLabel* strategy_note_;
    bool strategy_chosen_ = false;
    QComboBox* order_;
    /// The user picked or typed an order: a change of strategy no longer sets its default.
    bool order_chosen_ = false;
    QLineEdit* max_growth_;
    QLineEdit* max_moved_;
    QLineEdit* dedup_chunks_;
    QLineEdit* workload_;
    QComboBox* guest_;
    QPushButton* plan_button_;
    QPushButton* apply_button_;
    QLabel* judgement_;
    QLabel* summary_;
};

}  // namespace guestfrag::gui
