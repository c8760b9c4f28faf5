// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>
#include <QStringList>

#include "core/estimate/io_stats.hpp"

class QChart;

namespace guestfrag::gui {

/// What a histogram's limits count: bytes (IO length) or sectors (seek distance).
enum class HistogramUnit { Bytes, Sectors };

/// Bucket labels of a vscsiStats histogram, each bucket by its upper limit, then ">last
/// limit": bytes in the unit they are a whole number of ("512 B", "64 KiB", "4095 B"), sectors with
/// multiples of 1000 written "500k" and negative ones "−500k".
[[nodiscard]] QStringList bucket_labels(const Histogram& histogram, HistogramUnit unit);

/// A bar chart of `before` and, when given, `after` (same limits; bars side by side per
/// bucket), titled `title`, its axes titled and labelled in `unit`. The bar sets are named
/// "before" and "after", in a colour-blind-safe pair, after hatched too. The caller owns the
/// chart (a QChartView takes it over).
[[nodiscard]] QChart* make_histogram_chart(const QString& title, HistogramUnit unit, const Histogram& before,
                                           const Histogram* after);

/// Sum of the values of the bar set named `set_name` in a chart made above; 0 when absent.
[[nodiscard]] double bar_total(const QChart& chart, const QString& set_name);

/// "IOs 1,234 → 456 (−63.0%) · sequential 12.0% → 88.5% · HDD 12.3 s → 2.1 s ...": the
/// headline deltas of a workload before and after a plan.
[[nodiscard]] QString headline_text(const IoStats& before, const IoStats& after);

}  // namespace guestfrag::gui
