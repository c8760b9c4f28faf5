// SPDX-License-Identifier: GPL-2.0-or-later
// The window's File ▸ Export actions: plan JSON (core/plan/plan_io), the HTML report and
// the histogram charts as PNG.
#include <QFileDialog>
#include <QMessageBox>

#include "app/gui/histogram_panel.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/report_export.hpp"
#include "core/plan/plan_io.hpp"

namespace guestfrag::gui {

void MainWindow::export_plan() {
    if (!plan_) return (void)QMessageBox::information(this, tr("Export plan"), tr("There is no plan yet."));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export plan"), QStringLiteral("plan.json"),
                                                      tr("guestfrag plan (*.json)"));
    if (path.isEmpty()) return;
    try {
        const VolumeMap& before = opened_.analysis->volumes.at(plan_->volume).map;
        write_text_file(path, QByteArray::fromStdString(plan_to_json(plan_->plan, before)));
    } catch (const Error& e) {
        QMessageBox::critical(this, tr("Export plan"), QString::fromStdString(e.what()));
    }
}

void MainWindow::export_report() {
    if (!plan_) return (void)QMessageBox::information(this, tr("Export report"), tr("There is no plan yet."));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export report"), QStringLiteral("report.html"),
                                                      tr("HTML (*.html)"));
    if (path.isEmpty()) return;
    try {
        const QString html = html_report(opened_, *plan_, histograms_->headline(),
                                         histograms_->chart_image(HistogramPanel::IoLength),
                                         histograms_->chart_image(HistogramPanel::SeekDistance));
        write_text_file(path, html.toUtf8());
    } catch (const Error& e) {
        QMessageBox::critical(this, tr("Export report"), QString::fromStdString(e.what()));
    }
}

void MainWindow::export_charts() {
    if (!plan_) return (void)QMessageBox::information(this, tr("Export charts"), tr("There is no plan yet."));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export charts"), QStringLiteral("histograms.png"),
                                                      tr("PNG image (*.png)"));
    if (path.isEmpty()) return;
    // Both charts side by side, as the window shows them.
    const QImage both = histograms_->charts_image();
    if (!both.save(path, "PNG")) QMessageBox::critical(this, tr("Export charts"), tr("Cannot write %1").arg(path));
}

}  // namespace guestfrag::gui
