// SPDX-License-Identifier: GPL-2.0-or-later
// The window's File ▸ Compact to a new image: the settings dialog, then the pipeline's
// compact_to_copy on a worker thread followed by CompactProgressDialog (docs/gui.md).
#include <memory>

#include <QLabel>
#include <QMessageBox>

#include "app/gui/background_job.hpp"
#include "app/gui/compact_dialog.hpp"
#include "app/gui/compact_progress_dialog.hpp"
#include "app/gui/files_model.hpp"
#include "app/gui/main_window.hpp"
#include "core/io/rate_limiter.hpp"

namespace guestfrag::gui {

bool MainWindow::compacting() const { return compact_job_->running(); }

std::unique_ptr<CompactDialog> MainWindow::compact_dialog() {
    if (!opened_.analysis || opened_.analysis->volumes.empty()) return nullptr;
    return std::make_unique<CompactDialog>(image_path_, *opened_.image, opened_.analysis->volumes.size(),
                                           this);
}

void MainWindow::choose_compact() {
    const auto dialog = compact_dialog();
    if (!dialog || dialog->exec() != QDialog::Accepted) return;
    QString refusal;
    if (!compact_to_copy(dialog->request(), &refusal))
        QMessageBox::warning(this, tr("Compact to a new image"), refusal);
}

bool MainWindow::compact_to_copy(const CompactRequest& request, QString* refusal) {
    const auto refuse = [refusal](const QString& why) {
        if (refusal) *refusal = why;
        return false;
    };
    if (!opened_.analysis || opened_.analysis->volumes.empty())
        return refuse(tr("There is no NTFS volume to compact: open an image that has one."));
    if (job_->running() || writing()) return refuse(tr("Other work is running; wait for it to end."));
    if (const QString why = compact_refusal(request, *opened_.image); !why.isEmpty()) return refuse(why);

    CompactOptions options;
    options.output = request.output;
    options.replace = false;  // an existing output is refused, never replaced (as guestfrag compact)
    options.format = request.format;
    options.granule = request.granule;
    options.pack = request.pack;
    options.verify = request.verify;
    const OpenOptions open{{}, parents_};
    const auto meter = std::make_shared<CompactMeter>();
    // Shared with the dialog, which shows the bytes that passed through it.
    const auto limiter = std::make_shared<RateLimiter>(request.rate);
    const QString output = QString::fromStdString(request.output);
    if (compact_dialog_) compact_dialog_->deleteLater();
    compact_dialog_ = new CompactProgressDialog(
        meter, limiter, compact_step_count(options, opened_.analysis->volumes.size()), output, this);
    CompactProgressDialog* dialog = compact_dialog_;
    // Every output format stands alone (a container is converted from the whole raw disk):
    // it opens without the input's parents.
    follow(dialog, compact_job_, output, {});

    status_->setText(tr("Compacting %1 into %2…").arg(image_path_, output));
    compact_job_->start<CompactResult>(
        [path = image_path_.toStdString(), open, options, limiter, meter](const Progress& progress) {
            return guestfrag::compact_to_copy(path, open, metered_options(options, limiter.get(), meter),
                                              metered_progress(progress, meter));
        },
        [this, dialog](CompactResult result) {
            status_->setText(tr("Compacted into %1: %2 on the host instead of %3.")
                                 .arg(QString::fromStdString(result.output),
                                      size_text(result.host_bytes_output),
                                      size_text(result.host_bytes_input)));
            dialog->show_result(result);
            update_actions_enabled();
            emit compactFinished();
        },
        [this, dialog](const Error& error) {
            status_->setText(error.kind() == ErrorKind::Cancelled ? tr("Compaction cancelled.")
                                                                  : tr("Compaction failed."));
            dialog->show_error(error);
            update_actions_enabled();
            emit compactFinished();
        });
    update_actions_enabled();
    return true;
}

}  // namespace guestfrag::gui
