// SPDX-License-Identifier: GPL-2.0-or-later
// The window's File ▸ Apply plan to a copy: the settings dialog, then the pipeline's
// apply_to_copy on a worker thread followed by ApplyProgressDialog (docs/gui.md).
#include <memory>

#include <QLabel>
#include <QMessageBox>

#include "app/gui/apply_dialog.hpp"
#include "app/gui/apply_progress_dialog.hpp"
#include "app/gui/background_job.hpp"
#include "app/gui/main_window.hpp"
#include "core/io/rate_limiter.hpp"

namespace guestfrag::gui {

bool MainWindow::applying() const { return apply_job_->running(); }

std::unique_ptr<ApplyDialog> MainWindow::apply_dialog() {
    if (!plan_ || plan_->plan.moves.empty()) return nullptr;
    return std::make_unique<ApplyDialog>(image_path_, *opened_.image, plan_->plan.moves.size(), this);
}

void MainWindow::choose_apply() {
    const auto dialog = apply_dialog();
    if (!dialog || dialog->exec() != QDialog::Accepted) return;
    QString refusal;
    if (!apply_to_copy(dialog->request(), &refusal))
        QMessageBox::warning(this, tr("Apply plan to a copy"), refusal);
}

bool MainWindow::apply_to_copy(const ApplyRequest& request, QString* refusal) {
    const auto refuse = [refusal](const QString& why) {
        if (refusal) *refusal = why;
        return false;
    };
    if (!plan_ || plan_->plan.moves.empty()) return refuse(tr("There is no plan with moves to apply."));
    if (job_->running() || writing()) return refuse(tr("Other work is running; wait for it to end."));
    if (const QString why = apply_refusal(request, image_path_.toStdString(), *opened_.image); !why.isEmpty())
        return refuse(why);

    ApplyOptions options;
    options.output = request.output;
    options.format = request.format;
    options.verify = request.verify;
    const OpenOptions open{{}, parents_};
    const auto meter = std::make_shared<ApplyMeter>();
    // Shared with the dialog, which shows the bytes that passed through it.
    const auto limiter = std::make_shared<RateLimiter>(request.rate);
    const QString output = QString::fromStdString(request.output);
    if (apply_dialog_) apply_dialog_->deleteLater();
    apply_dialog_ = new ApplyProgressDialog(meter, limiter, apply_steps(options).size(), output, this);
    ApplyProgressDialog* dialog = apply_dialog_;
    // Window-modal (follow): the plan it applies stays the one shown while it runs.
    follow(dialog, apply_job_, output, apply_output_open_options(open, request.format).parents);

    status_->setText(tr("Applying the plan to %1…").arg(output));
    apply_job_->start<ApplyResult>(
        [path = image_path_.toStdString(), open, plan = plan_->plan, options, limiter,
         meter](const Progress& progress) {
            return guestfrag::apply_to_copy(path, open, plan, metered_options(options, limiter.get(), meter),
                                            metered_progress(progress, meter));
        },
        [this, dialog](ApplyResult result) {
            status_->setText(tr("Applied %1 of %2 moves to %3.")
                                 .arg(result.moves.done.size())
                                 .arg(result.plan.moves.size())
                                 .arg(QString::fromStdString(result.output)));
            dialog->show_result(result);
            update_actions_enabled();
            emit applyFinished();
        },
        [this, dialog](const Error& error) {
            status_->setText(error.kind() == ErrorKind::Cancelled ? tr("Apply cancelled.")
                                                                  : tr("Apply failed."));
            dialog->show_error(error);
            update_actions_enabled();
            emit applyFinished();
        });
    update_actions_enabled();
    return true;
}

}  // namespace guestfrag::gui
