// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/frontier_chart.hpp"

#include <algorithm>

#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

namespace guestfrag::gui {

namespace {

// The view's least height that leaves the plot 120 px (four tick intervals of 30 px, each
// taller than two label lines) beside the title, the legend and the data moved axis.
constexpr int kMinimumHeight = 260;

}  // namespace

FrontierChart::FrontierChart(QWidget* parent)
    : QChartView(parent), moved_(new QValueAxis), fragmentation_(new QValueAxis) {
    QChart* trade_off = chart();
    trade_off->setTitle(tr("Free-space fragmentation after the plan's first moves"));
    // Beside the plot rather than above it: the tab is wide and short.
    trade_off->legend()->setAlignment(Qt::AlignRight);
    moved_->setTitleText(tr("data moved (MiB)"));
    // Short enough to stand beside the plot at its least height; the chart's title says which.
    fragmentation_->setTitleText(tr("fragmentation (%)"));
    for (QValueAxis* axis : {moved_, fragmentation_})
        axis->setLabelFormat(QStringLiteral("%g"));  // nice numbers need no trailing zeros: "2.5", "10"
    trade_off->addAxis(moved_, Qt::AlignBottom);
    trade_off->addAxis(fragmentation_, Qt::AlignLeft);
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(kMinimumHeight);
    show_result(nullptr);
}

void FrontierChart::show_result(const PlanResult* result) {
    QChart* trade_off = chart();
    trade_off->removeAllSeries();
    // What the plan's first moves reach at each budget, the knee marked.
    auto* curve = new QLineSeries;
    curve->setName(tr("plan"));
    auto* knee = new QScatterSeries;
    knee->setName(tr("knee"));
    double moved = 0;
    double highest = 0;
    if (result && result->frontier) {
        const auto& points = result->frontier->points;
        for (std::size_t k = 0; k < points.size(); ++k) {
            const QPointF at(static_cast<double>(points[k].moved_bytes) / (1 << 20),
                             points[k].free_space_fragmentation_percent);
            curve->append(at);
            if (result->frontier->knee == k) knee->append(at);
            moved = std::max(moved, at.x());
            highest = std::max(highest, at.y());
        }
        // The legend says so where no budget gains more than its share (docs/planner.md §13).
        if (!result->frontier->knee) knee->setName(tr("knee: none"));
    }
    for (QXYSeries* series : {static_cast<QXYSeries*>(curve), static_cast<QXYSeries*>(knee)}) {
        trade_off->addSeries(series);
        series->attachAxis(moved_);
        series->attachAxis(fragmentation_);
    }
    // From 0, so that a small gain looks small; Qt Charts cannot divide an empty range (no
    // plan, a plan without moves) into ticks: at least 1 MiB and 1 %.
    moved_->setRange(0, std::max(moved, 1.0));
    fragmentation_->setRange(0, std::max(highest, 1.0));
    moved_->applyNiceNumbers();
    fragmentation_->applyNiceNumbers();
}

}  // namespace guestfrag::gui
