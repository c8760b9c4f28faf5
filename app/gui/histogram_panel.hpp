// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QImage>
#include <QWidget>

#include "app/gui/session.hpp"

class QChart;
class QChartView;
class QLabel;

namespace guestfrag::gui {

/// Before/after IO-size and seek-distance histograms of the plan's workload, side by side,
/// with the headline deltas above them. Draws what PlanResult holds; computes nothing.
class HistogramPanel : public QWidget {
    Q_OBJECT
public:
    explicit HistogramPanel(QWidget* parent = nullptr);
    /// Shows `result`'s estimates (nullptr: empty charts).
    void show_result(const PlanResult* result);
    [[nodiscard]] QChart* io_length_chart() const;
    [[nodiscard]] QChart* seek_distance_chart() const;
    [[nodiscard]] QString headline() const;
    enum Which { IoLength, SeekDistance };
    /// One chart as drawn on screen.
    [[nodiscard]] QImage chart_image(Which which) const;
    /// Both charts side by side as drawn on screen.
    [[nodiscard]] QImage charts_image() const;

private:
    QLabel* headline_;
    QChartView* io_length_;
    QChartView* seek_distance_;
};

}  // namespace guestfrag::gui
