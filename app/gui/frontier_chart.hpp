// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QChartView>

#include "app/gui/session.hpp"

class QValueAxis;

namespace guestfrag::gui {

/// The plan's trade-off (plan --frontier, docs/planner.md §13): free-space fragmentation (%)
/// against the data (MiB) the plan's first moves up to each budget move, series "plan" and
/// "knee". The Trade-off tab gives it the window's width, so that its plot has room and its
/// axis labels and titles are never cut short.
class FrontierChart : public QChartView {
    Q_OBJECT
public:
    explicit FrontierChart(QWidget* parent = nullptr);
    /// Shows `result`'s frontier (nullptr, or none computed yet: empty axes).
    void show_result(const PlanResult* result);

private:
    QValueAxis* moved_;
    QValueAxis* fragmentation_;
};

}  // namespace guestfrag::gui
