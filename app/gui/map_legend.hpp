// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <vector>

#include <QColor>
#include <QString>
#include <QWidget>

namespace guestfrag::gui {

/// The cluster map's legend: a bordered swatch and a label per state, wrapped onto as many
/// lines as the width needs (a border, so that the near-white "free" swatch shows).
class MapLegend : public QWidget {
    Q_OBJECT
public:
    struct Entry {
        QColor colour;
        QString text;
    };
    explicit MapLegend(QWidget* parent = nullptr);
    void set_entries(std::vector<Entry> entries);

    [[nodiscard]] bool hasHeightForWidth() const override { return true; }
    [[nodiscard]] int heightForWidth(int width) const override;
    [[nodiscard]] QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    /// Lays the entries out for `width`; returns the height used and, when `origins` is
    /// given, where each entry starts.
    int layout(int width, std::vector<QPoint>* origins) const;

    std::vector<Entry> entries_;
};

}  // namespace guestfrag::gui
