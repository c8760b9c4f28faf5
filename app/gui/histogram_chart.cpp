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

// Before and after in the Okabe-Ito pair that colour-blind readers tell apart (blue and
// orange), and after hatched as well: a second cue in grey print and for any eye.
const QColor kBefore(0x00, 0x72, 0xb2);
const QColor kAfter(0xe6, 0x9f, 0x00);

QBarSet* bar_set(const QString& name, const Histogram& histogram, const QBrush& brush) {
    auto* set = new QBarSet(name);
    for (const std::uint64_t count : histogram.counts()) set->append(static_cast<double>(count));
    set->setBrush(brush);
    set->setBorderColor(brush.color().darker(150));
    return set;
}

QString change(double before, double after) {
    if (before == 0) return {};
    const double percent = (after - before) * 100.0 / before;
    return QStringLiteral(" (") + (percent >= 0 ? QStringLiteral("+") : QStringLiteral("−")) +
           QString::number(std::abs(percent), 'f', 1) + QStringLiteral("%)");
}

/// 500000 → "500k", −4096 → "−4096": short enough for 34 rotated labels side by side.
QString compact_number(std::int64_t value) {
    const QString sign = value < 0 ? QStringLiteral("−") : QString();
    const std::int64_t magnitude = value < 0 ? -value : value;
    if (magnitude != 0 && magnitude % 1000 == 0)
        return sign + QString::number(magnitude / 1000) + QStringLiteral("k");
    return sign + QString::number(magnitude);
}

/// 512 → "512 B", 65536 → "64 KiB": the IO sizes people speak of; vscsiStats' limits just
/// under a power of two stay exact ("4095 B"), as short as a label turned on its side can be
/// where the chart is low ("under 4 KiB" ran past the chart's foot at 1280x720).
QString byte_size(std::int64_t bytes) {
    if (bytes >= 1 << 20 && bytes % (1 << 20) == 0)
        return QString::number(bytes >> 20) + QStringLiteral(" MiB");
    if (bytes >= 1024 && bytes % 1024 == 0) return QString::number(bytes >> 10) + QStringLiteral(" KiB");
    return QString::number(bytes) + QStringLiteral(" B");
}

QString seconds(double s) { return QString::number(s, 'f', s < 10 ? 2 : 1) + " s"; }

}  // namespace

QStringList bucket_labels(const Histogram& histogram, HistogramUnit unit) {
    // Each bucket by its upper limit (the values in it are at most that, and above the
    // previous limit), the last as more than the last limit.
    const auto text = [unit](std::int64_t limit) {
        return unit == HistogramUnit::Bytes ? byte_size(limit) : compact_number(limit);
    };
    QStringList labels;
    for (const std::int64_t limit : histogram.limits()) labels << text(limit);
    labels << QStringLiteral(">") + text(histogram.limits().back());
    return labels;
}

QChart* make_histogram_chart(const QString& title, HistogramUnit unit, const Histogram& before,
                             const Histogram* after) {
    auto* series = new QBarSeries;
    series->append(bar_set(QStringLiteral("before"), before, QBrush(kBefore)));
    if (after) series->append(bar_set(QStringLiteral("after"), *after, QBrush(kAfter, Qt::BDiagPattern)));

    auto* chart = new QChart;
    chart->setTitle(title);
    chart->addSeries(series);
    chart->setAnimationOptions(QChart::NoAnimation);  // the screenshot must show final bars
    // Beside the plot: the tab is short of height, not of width.
    chart->legend()->setAlignment(Qt::AlignRight);
    chart->setMargins(QMargins(4, 4, 4, 4));

    auto* x = new QBarCategoryAxis;
    x->append(bucket_labels(before, unit));
    // Upright labels would need a bucket's width for "512 KiB"; turned, a line's height.
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
    y->setTitleText(QObject::tr("IOs"));
    y->setTitleFont(small);
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
