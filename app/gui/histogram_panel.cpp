// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/histogram_panel.hpp"

#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QPainter>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "app/gui/histogram_chart.hpp"
#include "app/gui/provisioned_model.hpp"

namespace guestfrag::gui {

HistogramPanel::HistogramPanel(QWidget* parent)
    : QWidget(parent),
      headline_(new QLabel),
      io_length_(new QChartView),
      seek_distance_(new QChartView),
      provisioned_(new ProvisionedModel(this)),
      provisioned_view_(gui::provisioned_view(
          provisioned_,
          tr("The workload on eager-zeroed, lazy-zeroed and thin storage, as guestfrag estimate prints it"))),
      split_(new QSplitter(Qt::Horizontal)) {
    headline_->setWordWrap(true);
    headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    for (QChartView* view : {io_length_, seek_distance_}) {
        view->setRenderHint(QPainter::Antialiasing);
        view->setMinimumHeight(150);
    }
    // The charts one above the other, each the pane's width: the seek distance's 34 buckets
    // need it for their labels. The table beside them, not under: it has 14 rows.
    auto* charts = new QWidget;
    auto* charts_layout = new QVBoxLayout(charts);
    charts_layout->setContentsMargins(0, 0, 0, 0);
    charts_layout->addWidget(io_length_);
    charts_layout->addWidget(seek_distance_);
    split_->addWidget(charts);
    split_->addWidget(provisioned_view_);
    split_->setStretchFactor(0, 1);
    split_->setStretchFactor(1, 0);
    // Dragging the handle (to give the charts more room) is the user's choice: kept from then on.
    connect(split_, &QSplitter::splitterMoved, this, [this] { table_fitted_by_user_ = true; });
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(headline_);
    layout->addWidget(split_, 1);
    show_result(nullptr);
}

void HistogramPanel::show_result(const PlanResult* result) {
    // Until the tab asks for it, a plan has no estimate: the charts stay empty meanwhile.
    const VolumeEstimate* estimate = result && result->estimate ? &*result->estimate : nullptr;
    const IoStats empty;
    const IoStats& before = estimate ? estimate->before.stats : empty;
    const IoStats* after = estimate ? &estimate->after->stats : nullptr;
    const QString workload = estimate ? QString::fromStdString(estimate->workload.workload.text()) : QString();
    // setChart() does not delete the previous chart: the view would leak it.
    QChart* old_io = io_length_->chart();
    QChart* old_seek = seek_distance_->chart();
    // Titled with the x axis's meaning: an axis title under its turned labels would take
    // the height the bars need at 1280x720.
    io_length_->setChart(
        make_histogram_chart(tr("IO length (each bar: IOs of at most its size), %1").arg(workload),
                             HistogramUnit::Bytes, before.io_length, after ? &after->io_length : nullptr));
    seek_distance_->setChart(make_histogram_chart(
        tr("Seek distance in sectors (each bar: seeks of at most its "
           "distance, backward below 0), %1")
            .arg(workload),
        HistogramUnit::Sectors, before.seek_distance, after ? &after->seek_distance : nullptr));
    delete old_io;
    delete old_seek;
    provisioned_->set_estimate(estimate);
    provisioned_view_->resizeColumnsToContents();
    fit_table();
    const std::string_view guest = estimate ? estimate->workload.guest.name : std::string_view();
    headline_->setText(
        estimate ? tr("<b>Workload %1</b>, %2 guest: %3")
                       .arg(workload, QString::fromUtf8(guest.data(), static_cast<qsizetype>(guest.size())),
                            headline_text(before, *after))
        : result ? tr("No estimate of this plan yet: it is made when this tab is shown.")
                 : tr("Plan a volume to compare its IO before and after."));
}

void HistogramPanel::fit_table() {
    if (table_fitted_by_user_) return;
    // As wide as its columns, so that no figure is cut off; the charts take the rest.
    const int table = full_table_width(*provisioned_view_);
    const int charts = split_->width() - split_->handleWidth() - table;
    // A hidden tab is not laid out (its width is stale): it is fitted when it is resized.
    if (charts > 0) split_->setSizes({charts, table});
}

void HistogramPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fit_table();  // the layout has already resized the splitter
}

QChart* HistogramPanel::io_length_chart() const { return io_length_->chart(); }
QChart* HistogramPanel::seek_distance_chart() const { return seek_distance_->chart(); }
QString HistogramPanel::headline() const { return headline_->text(); }

QImage HistogramPanel::chart_image(Which which) const {
    return (which == IoLength ? io_length_ : seek_distance_)->grab().toImage();
}

QImage HistogramPanel::charts_image() const {
    const QImage io = chart_image(IoLength);
    const QImage seek = chart_image(SeekDistance);
    QImage both(io.width() + seek.width(), std::max(io.height(), seek.height()),
                QImage::Format_ARGB32_Premultiplied);
    both.fill(Qt::white);
    QPainter painter(&both);
    painter.drawImage(0, 0, io);
    painter.drawImage(io.width(), 0, seek);
    return both;
}

}  // namespace guestfrag::gui
