// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QImage>
#include <QString>

#include "app/gui/session.hpp"

namespace guestfrag::gui {

/// A self-contained HTML page of one volume: the image, the volume's fragmentation figures,
/// the most fragmented files, the plan's summary, the workload's headline deltas, its
/// "Eager, lazy and thin" table (ProvisionedModel), both histogram charts embedded as PNG
/// (data: URLs), the impact warnings and the plan's own IO ("Carrying out the plan":
/// PlanWritesPanel's caption, figures and table), or why the impact is missing. Pure text
/// building, of the figures `plan` has: the window assesses the estimate and the impact first.
[[nodiscard]] QString html_report(const OpenedImage& opened, const PlanResult& plan, const QString& headline,
                                  const QImage& io_length_chart, const QImage& seek_distance_chart);

/// Writes `text` to `path` (UTF-8). Throws Error(Io, reason) when it cannot.
void write_text_file(const QString& path, const QByteArray& text);

}  // namespace guestfrag::gui
