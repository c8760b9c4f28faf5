// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/cluster_map_widget.hpp"

#include <algorithm>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPaintEvent>
#include <QToolTip>

namespace guestfrag::gui {

QColor cell_colour(CellState state) {
    switch (state) {
        case CellState::Mft: return {0x7b, 0x3f, 0xa0};
        case CellState::Metadata: return {0x4d, 0x4d, 0x4d};
        case CellState::Excluded: return {0xd4, 0xa0, 0x17};
        case CellState::Fragmented: return {0xd9, 0x3b, 0x2f};
        case CellState::Contiguous: return {0x3a, 0x7b, 0xd5};
        case CellState::MftZone: return {0xc8, 0xe6, 0xc9};
        case CellState::Free: return {0xff, 0xff, 0xff};
    }
    return Qt::black;
}

QColor layer_colour(LayerState state) {
    switch (state) {
        case LayerState::TopLayer: return {0x2b, 0x8c, 0xbe};
        case LayerState::ParentLayer: return {0xe0, 0x82, 0x14};
        case LayerState::Unallocated: return {0xff, 0xff, 0xff};
    }
    return Qt::black;
}

namespace {

QString state_text(std::string_view name, std::size_t cells) {
    return QStringLiteral("%1 (%2)").arg(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()))).arg(cells);
}

}  // namespace

std::vector<MapLegend::Entry> legend_entries(MapMode mode, const ClusterCells& cells, const LayerCells& layers) {
    std::vector<MapLegend::Entry> out;
    if (mode == MapMode::Allocation) {
        for (std::size_t i = 0; i < kCellStates; ++i) {
            const auto state = static_cast<CellState>(i);
            out.push_back({cell_colour(state), state_text(cell_state_name(state), cells.cells_in(state))});
        }
    } else {
        for (std::size_t i = 0; i < kLayerStates; ++i) {
            const auto state = static_cast<LayerState>(i);
            out.push_back({layer_colour(state), state_text(layer_state_name(state), layers.cells_in(state))});
        }
    }
    return out;
}

ClusterMapWidget::ClusterMapWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Minimum);
}

void ClusterMapWidget::show_volume(std::shared_ptr<const VolumeMap> volume,
                                   std::shared_ptr<const std::vector<Layer>> layers, bool keep_zoom) {
    const bool same_size = volume && shown_.volume && volume->total_clusters == shown_.volume->total_clusters;
    const std::int64_t zoom = keep_zoom && same_size ? clusters_per_cell() : 0;
    show_cells(MapCells::compute(std::move(volume), std::move(layers), zoom));
}

void ClusterMapWidget::show_cells(MapCells cells) {
    shown_ = std::move(cells);
    cells_replaced();
}

void ClusterMapWidget::set_clusters_per_cell(std::int64_t clusters_per_cell) {
    clusters_per_cell = std::max<std::int64_t>(clusters_per_cell, 1);
    if (!shown_.volume || clusters_per_cell == this->clusters_per_cell()) return;
    show_cells(MapCells::compute(shown_.volume, shown_.layers, clusters_per_cell));
}

void ClusterMapWidget::set_cell_pixels(int pixels) {
    cell_pixels_ = std::clamp(pixels, 2, 64);
    update_height();
    update();
}

void ClusterMapWidget::set_mode(MapMode mode) {
    mode_ = mode;
    update();
}

void ClusterMapWidget::highlight_stream(std::optional<std::size_t> index) {
    highlighted_.assign(shown_.cells.size(), false);
    if (shown_.volume && index && *index < shown_.volume->streams.size()) {
        for (const Extent& e : shown_.volume->streams[*index].extents) {
            if (e.lcn == Extent::kSparse || e.clusters <= 0) continue;
            const std::size_t last = std::min(shown_.cells.cell_of(e.lcn + e.clusters - 1), shown_.cells.size() - 1);
            for (std::size_t cell = shown_.cells.cell_of(e.lcn); cell <= last; ++cell) highlighted_[cell] = true;
        }
    }
    update();
}

std::size_t ClusterMapWidget::highlighted_cells() const {
    return static_cast<std::size_t>(std::count(highlighted_.begin(), highlighted_.end(), true));
}

void ClusterMapWidget::cells_replaced() {
    highlighted_.assign(shown_.cells.size(), false);
    update_height();
    update();
    emit cellsChanged();
}

int ClusterMapWidget::columns() const { return std::max(1, width() / cell_pixels_); }

void ClusterMapWidget::update_height() {
    const auto cols = static_cast<std::size_t>(columns());
    const auto rows = static_cast<int>((shown_.cells.size() + cols - 1) / cols);
    setMinimumHeight(std::max(rows * cell_pixels_, cell_pixels_));
}

void ClusterMapWidget::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    update_height();
}

std::optional<std::size_t> ClusterMapWidget::cell_at(QPoint pos) const {
    if (pos.x() < 0 || pos.y() < 0) return std::nullopt;
    const int col = pos.x() / cell_pixels_;
    if (col >= columns()) return std::nullopt;
    const auto cell = static_cast<std::size_t>(pos.y() / cell_pixels_) * static_cast<std::size_t>(columns()) +
                      static_cast<std::size_t>(col);
    if (cell >= shown_.cells.size()) return std::nullopt;
    return cell;
}

QString ClusterMapWidget::tooltip_for(std::size_t cell) const {
    const auto [first, end] = shown_.cells.cluster_range(cell);
    const std::string_view state = mode_ == MapMode::Allocation ? cell_state_name(shown_.cells.state(cell))
                                                                 : layer_state_name(shown_.layer_cells.state(cell));
    QString text = QStringLiteral("<b>clusters %1–%2</b> (%3)<br>")
                       .arg(first)
                       .arg(end - 1)
                       .arg(QString::fromUtf8(state.data(), static_cast<qsizetype>(state.size())));
    constexpr std::size_t kShown = 8;
    const std::vector<std::size_t> streams = shown_.index.streams_in(first, end, kShown + 1);
    if (streams.empty()) text += tr("no file data");
    for (std::size_t i = 0; i < std::min(streams.size(), kShown); ++i) {
        const Stream& s = shown_.volume->streams[streams[i]];
        text += QString::fromStdString(shown_.volume->path_of(s.mft_record)).toHtmlEscaped();
        if (s.label() != "$DATA") text += QStringLiteral(" [%1]").arg(QString::fromStdString(s.label()).toHtmlEscaped());
        text += QStringLiteral("<br>");
    }
    if (streams.size() > kShown) text += tr("…and more");
    return text;
}

bool ClusterMapWidget::event(QEvent* event) {
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        if (const auto cell = cell_at(help->pos()); cell && shown_.volume)
            QToolTip::showText(help->globalPos(), tooltip_for(*cell), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

void ClusterMapWidget::mousePressEvent(QMouseEvent* event) {
    const auto cell = cell_at(event->position().toPoint());
    if (!cell || !shown_.volume || event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
    const auto [first, end] = shown_.cells.cluster_range(*cell);
    const std::vector<std::size_t> streams = shown_.index.streams_in(first, end, 1);
    if (!streams.empty()) emit streamClicked(streams.front());
}

void ClusterMapWidget::paintEvent(QPaintEvent* event) {
    QPainter painter(this);
    // The gaps between cells are this grey, so white (free) cells stand out as cells.
    painter.fillRect(event->rect(), shown_.cells.size() ? QColor(0xc4, 0xc4, 0xc4) : palette().window().color());
    if (shown_.cells.size() == 0) return;
    const int cols = columns();
    const int px = cell_pixels_;
    // Only the rows the event asks for: a large map in a scroll area repaints a slice.
    const int first_row = std::max(0, event->rect().top() / px);
    const int last_row = event->rect().bottom() / px;
    const int gap = px >= 4 ? 1 : 0;
    for (int row = first_row; row <= last_row; ++row) {
        for (int col = 0; col < cols; ++col) {
            const auto cell = static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(col);
            if (cell >= shown_.cells.size()) return;
            const QColor colour =
                mode_ == MapMode::Allocation ? cell_colour(shown_.cells.state(cell)) : layer_colour(shown_.layer_cells.state(cell));
            const QRect rect(col * px, row * px, px - gap, px - gap);
            painter.fillRect(rect, colour);
            if (highlighted_[cell]) {
                painter.fillRect(rect, QColor(0xff, 0xd7, 0x00));
                painter.setPen(Qt::black);
                painter.drawRect(rect.adjusted(0, 0, -1, -1));
            }
        }
    }
}

}  // namespace guestfrag::gui
