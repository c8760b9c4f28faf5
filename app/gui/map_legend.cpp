// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/map_legend.hpp"

#include <QPainter>

namespace guestfrag::gui {

namespace {

constexpr int kGap = 14;  // between entries

}  // namespace

MapLegend::MapLegend(QWidget* parent) : QWidget(parent) {
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
}

void MapLegend::set_entries(std::vector<Entry> entries) {
    entries_ = std::move(entries);
    updateGeometry();
    update();
}

int MapLegend::layout(int width, std::vector<QPoint>* origins) const {
    const QFontMetrics fm = fontMetrics();
    const int line = fm.height() + 4;
    const int swatch = fm.height();
    int x = 0;
    int y = 0;
    for (const Entry& e : entries_) {
        const int w = swatch + 4 + fm.horizontalAdvance(e.text);
        if (x > 0 && x + w > width) {
            x = 0;
            y += line;
        }
        if (origins) origins->emplace_back(x, y);
        x += w + kGap;
    }
    return entries_.empty() ? 0 : y + line;
}

int MapLegend::heightForWidth(int width) const { return layout(width, nullptr); }

QSize MapLegend::sizeHint() const { return {400, heightForWidth(width() > 0 ? width() : 400)}; }

void MapLegend::paintEvent(QPaintEvent*) {
    std::vector<QPoint> origins;
    layout(width(), &origins);
    QPainter painter(this);
    const QFontMetrics fm = fontMetrics();
    const int swatch = fm.height();
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        const QPoint o = origins[i];
        const QRect box(o.x(), o.y() + 2, swatch - 1, swatch - 1);
        painter.fillRect(box, entries_[i].colour);
        painter.setPen(palette().color(QPalette::Mid));
        painter.drawRect(box);
        painter.setPen(palette().color(QPalette::WindowText));
        painter.drawText(QPoint(o.x() + swatch + 4, o.y() + 2 + fm.ascent()), entries_[i].text);
    }
}

}  // namespace guestfrag::gui
