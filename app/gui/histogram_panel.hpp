// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QImage>
#include <QWidget>

#include "app/gui/session.hpp"

class QChart;
class QChartView;
class QLabel;
class QSplitter;
class QTableView;

namespace guestfrag::gui {

class ProvisionedModel;

/// Before/after IO-size and seek-distance histograms of the plan's workload, side by side,
/// with the headline deltas above them and, beside them, the workload on eager, lazy and
/// thin storage before and after (ProvisionedModel). Draws what PlanResult holds; computes
/// nothing.
class HistogramPanel : public QWidget {
    Q_OBJECT
public:
    explicit HistogramPanel(QWidget* parent = nullptr);
    /// Shows `result`'s estimates (nullptr, or none computed yet: empty charts).
    void show_result(const PlanResult* result);
    [[nodiscard]] QChart* io_length_chart() const;
    [[nodiscard]] QChart* seek_distance_chart() const;
    [[nodiscard]] QString headline() const;
    /// The "Eager, lazy and thin" table (before and after, estimate's rows).
    [[nodiscard]] ProvisionedModel* provisioned_model() const { return provisioned_; }
    [[nodiscard]] QTableView* provisioned_view() const { return provisioned_view_; }
    enum Which { IoLength, SeekDistance };
    /// One chart as drawn on screen.
    [[nodiscard]] QImage chart_image(Which which) const;
    /// Both charts side by side as drawn on screen.
    [[nodiscard]] QImage charts_image() const;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    /// Gives the table the width of its columns, unless the user has moved the handle.
    void fit_table();

    QLabel* headline_;
    QChartView* io_length_;
    QChartView* seek_distance_;
    ProvisionedModel* provisioned_;
    QTableView* provisioned_view_;
    QSplitter* split_;
    bool table_fitted_by_user_ = false;
};

}  // namespace guestfrag::gui
