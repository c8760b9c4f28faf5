// SPDX-License-Identifier: GPL-2.0-or-later
// What a person could not read in a widget: the GUI tests' checks that text is shown whole.
#pragma once

#include <QFontMetrics>
#include <QLabel>
#include <QStringList>
#include <QTableWidget>
#include <QWidget>

namespace guestfrag::test {

/// The visible labels under `root` that do not show all of their text: a wrapping label
/// lower than its text at its width, any other one narrower than its text. `checked`
/// counts the visible labels with text.
inline QStringList clipped_labels(const QWidget& root, int& checked) {
    QStringList clipped;
    for (const QLabel* label : root.findChildren<QLabel*>()) {
        if (!label->isVisible() || label->text().isEmpty()) continue;
        ++checked;
        if (label->wordWrap() ? label->height() < label->heightForWidth(label->width())
                              : label->width() < label->minimumSizeHint().width())
            clipped << label->text().left(60);
    }
    return clipped;
}

/// The rows of `table` (label, value) whose value in `column` is wider than the column but
/// shows on one line: cut off with an ellipsis, since a wrapped value needs two lines or
/// more. `wide` counts the values wider than their column.
inline QStringList cut_rows(const QTableWidget& table, int column, int& wide) {
    QStringList cut;
    const QFontMetrics metrics(table.font());
    for (int row = 0; row < table.rowCount(); ++row) {
        const QString value = table.item(row, column)->text();
        if (metrics.horizontalAdvance(value) <= table.columnWidth(column)) continue;
        ++wide;
        if (table.rowHeight(row) < 2 * metrics.lineSpacing()) cut << table.item(row, 0)->text();
    }
    return cut;
}

}  // namespace guestfrag::test
