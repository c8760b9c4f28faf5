// SPDX-License-Identifier: GPL-2.0-or-later
// The window's File ▸ Export actions: plan JSON (core/plan/plan_io), the HTML report and
// the histogram charts as PNG.
#include <functional>

#include <QFileDialog>
#include <QMessageBox>

#include "app/gui/background_job.hpp"
#include "app/gui/histogram_panel.hpp"
#include "app/gui/main_window.hpp"
#include "app/gui/report_export.hpp"
#include "core/plan/plan_io.hpp"

namespace guestfrag::gui {

void MainWindow::export_to(Figures needed, const QString& title, const QString& default_name,
                           const QString& filter, const std::function<void(const QString&)>& write) {
    if (!plan_) return (void)QMessageBox::information(this, title, tr("There is no plan yet."));
    // Figures are computed on the one worker: a running analysis or plan is not replaced.
    if (plan_->missing(needed) != 0 && job_->running())
        return (void)QMessageBox::information(this, title, tr("Wait until the work in progress ends."));
    assess(needed, [this, title, default_name, filter, write] {
        const QString path = QFileDialog::getSaveFileName(this, title, default_name, filter);
        if (path.isEmpty()) return;
        try {
            write(path);
        } catch (const Error& e) {
            QMessageBox::critical(this, title, QString::fromStdString(e.what()));
        }
    });
}

void MainWindow::export_plan() {
    export_to(0, tr("Export plan"), QStringLiteral("plan.json"), tr("guestfrag plan (*.json)"),
              [this](const QString& path) {
                  const VolumeMap& before = opened_.analysis->volumes.at(plan_->volume).map;
                  write_text_file(path, QByteArray::fromStdString(plan_to_json(plan_->plan, before)));
              });
}

void MainWindow::export_report() {
    export_to(Figure::Estimate | Figure::Impact, tr("Export report"), QStringLiteral("report.html"),
              tr("HTML (*.html)"), [this](const QString& path) {
                  const QString html = html_report(opened_, *plan_, histograms_->headline(),
                                                   histograms_->chart_image(HistogramPanel::IoLength),
                                                   histograms_->chart_image(HistogramPanel::SeekDistance));
                  write_text_file(path, html.toUtf8());
              });
}

void MainWindow::export_charts() {
    export_to(only(Figure::Estimate), tr("Export charts"), QStringLiteral("histograms.png"),
              tr("PNG image (*.png)"), [this](const QString& path) {
                  // Both charts side by side, as the window shows them.
                  if (!histograms_->charts_image().save(path, "PNG"))
                      throw Error(ErrorKind::Io, "cannot write " + path.toStdString());
              });
}

}  // namespace guestfrag::gui
