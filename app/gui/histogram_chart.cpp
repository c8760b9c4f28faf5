// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/histogram_chart.hpp"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace guestfrag::gui {

namespace {

QBarSet* bar_set(const QString& name, const Histogram& histogram, const QColor& colour) {
    auto* set = new QBarSet(name);
    for (const std::uint64_t count : histogram.counts()) set->append(static_cast<double>(count));
    set->setColor(colour);
    set->setBorderColor(colour.darker(130));
    return set;
}

QString change(double before, double after) {
    if (before == 0) return {};
    const double percent = (after - before) * 100.0 / before;
    return QStringLiteral(" (") + (percent >= 0 ? QStringLiteral("+") : QStringLiteral("−")) +
           QString::number(std::abs(percent), 'f', 1) + QStringLiteral("%)");
}

/// 500000 → "500k", 4095 → "4095": short enough for 34 rotated labels side by side.
QString compact_number(std::int64_t value) {
    if (value != 0 && value % 1000 == 0) return QString::number(value / 1000) + QStringLiteral("k");
    return QString::number(value);
}

QString seconds(double s) { return QString::number(s, 'f', s < 10 ? 2 : 1) + " s"; }

}  // namespace

QStringList bucket_labels(const Histogram& histogram) {
    QStringList labels;
    for (const std::int64_t limit : histogram.limits()) labels << QStringLiteral("≤") + compact_number(limit);
    labels << QStringLiteral(">") + compact_number(histogram.limits().back());
    return labels;
}

QChart* make_histogram_chart(const QString& title, const Histogram& before, const Histogram* after) {
    auto* series = new QBarSeries;
    series->append(bar_set(QStringLiteral("before"), before, QColor(0xd9, 0x5f, 0x4a)));
    if (after) series->append(bar_set(QStringLiteral("after"), *after, QColor(0x3c, 0x8d, 0x5a)));

    auto* chart = new QChart;
    chart->setTitle(title);
    chart->addSeries(series);
    chart->setAnimationOptions(QChart::NoAnimation);  // the screenshot must show final bars
    chart->legend()->setAlignment(Qt::AlignTop);

    auto* x = new QBarCategoryAxis;
    x->append(bucket_labels(before));
    x->setLabelsAngle(-90);
    x->setTruncateLabels(false);
    QFont small = x->labelsFont();
    small.setPointSizeF(small.pointSizeF() * 0.75);
    x->setLabelsFont(small);
    chart->addAxis(x, Qt::AlignBottom);
    series->attachAxis(x);

    auto* y = new QValueAxis;
    y->setLabelFormat(QStringLiteral("%.0f"));
    y->setLabelsFont(small);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(y);
    // An empty histogram (no plan yet, or a workload without IOs) would give the axis the
    // range [0, 0], which Qt Charts cannot divide into ticks.
    std::uint64_t highest = 1;
    for (const Histogram* h : {&before, after})
        if (h)
            for (const std::uint64_t count : h->counts()) highest = std::max(highest, count);
    y->setRange(0, static_cast<double>(highest));
    y->applyNiceNumbers();
    return chart;
}

double bar_total(const QChart& chart, const QString& set_name) {
    double total = 0;
    for (QAbstractSeries* series : chart.series())
        if (auto* bars = qobject_cast<QBarSeries*>(series))
            for (QBarSet* set : bars->barSets())
                if (set->label() == set_name)
                    for (qsizetype i = 0; i < set->count(); ++i) total += set->at(i);
    return total;
}

QString headline_text(const IoStats& before, const IoStats& after) {
    const QString arrow = QStringLiteral(" → ");
    QStringList parts;
    parts << QStringLiteral("IOs ") + QString::number(before.ios) + arrow + QString::number(after.ios) +
                 change(static_cast<double>(before.ios), static_cast<double>(after.ios));
    parts << QStringLiteral("sequential ") + QString::number(before.sequential_percent, 'f', 1) + "%" + arrow +
                 QString::number(after.sequential_percent, 'f', 1) + "%";
    parts << QStringLiteral("+1…+8 sectors ") + QString::number(before.near_sequential_percent, 'f', 1) +
                 "%" + arrow + QString::number(after.near_sequential_percent, 'f', 1) + "%";
    parts << QStringLiteral("HDD ") + seconds(before.device_seconds.hdd) + arrow + seconds(after.device_seconds.hdd) +
                 change(before.device_seconds.hdd, after.device_seconds.hdd);
    parts << QStringLiteral("SSD ") + seconds(before.device_seconds.ssd) + arrow + seconds(after.device_seconds.ssd);
    parts << QStringLiteral("array ") + seconds(before.device_seconds.array) + arrow +
                 seconds(after.device_seconds.array);
    return parts.join(QStringLiteral("   ·   "));
}

}  // namespace guestfrag::gui
