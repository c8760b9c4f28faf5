// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/apply_progress_dialog.hpp"

#include <QFileInfo>

namespace guestfrag::gui {

ApplyProgressDialog::ApplyProgressDialog(std::shared_ptr<const ApplyMeter> meter,
                                         std::shared_ptr<const RateLimiter> limiter, std::size_t steps,
                                         const QString& output, QWidget* parent)
    : NewDiskProgressDialog(shown_of(meter, steps), std::move(limiter),
                            tr("Applying the plan to %1").arg(QFileInfo(output).fileName()), output, parent),
      meter_(std::move(meter)) {}

void ApplyProgressDialog::show_result(const ApplyResult& r) {
    result_ = r;
    const bool overlay = r.format == ApplyOutputFormat::Qcow2;
    add_row(tr("Output"), QString::fromStdString(r.output));
    add_row(tr("Format"), overlay ? tr("qcow2 overlay backed by the input") : tr("raw disk"));
    add_row(tr("Partition"), QString::number(r.partition));
    add_row(tr("Moves done"), tr("%1 of %2").arg(r.moves.done.size()).arg(r.plan.moves.size()));
    add_row(tr("Moves skipped"), QString::number(r.moves.skipped.size()));
    add_skipped_rows(r.moves.skipped, tr("Skipped: %1"));
    add_row(tr("Data moved"), bytes_text(r.moves.bytes_copied));
    add_row(overlay ? tr("Changed clusters written") : tr("Disk data written"),
            bytes_text(r.disk_bytes_written));
    add_row(tr("Output file size"), bytes_text(r.output_file_bytes));
    add_row(tr("Time"), tr("%1 s").arg(r.seconds, 0, 'f', 1));
    if (r.verification) {
        const ApplyVerification& v = *r.verification;
        add_row(tr("Verification"),
                tr("passed: every stream identical, allocation as predicted, $Bitmap matches "
                   "the runlists, $MFTMirr matches $MFT"));
        add_row(tr("Streams hashed"), QString::number(v.streams_hashed));
        add_row(tr("Fragments"), tr("%1 before → %2 predicted → %3 after")
                                     .arg(v.fragments_before)
                                     .arg(v.fragments_predicted)
                                     .arg(v.fragments_after));
    } else {
        add_row(tr("Verification"), tr("not verified (turned off)"));
    }
    for (const std::string& warning : r.warnings)
        add_row(tr("Input warning"), QString::fromStdString(warning));
    succeed(
        r.verification
            ? tr("Applied %1 of %2 moves; the copy is verified.")
                  .arg(r.moves.done.size())
                  .arg(r.plan.moves.size())
            : tr("Applied %1 of %2 moves (not verified).").arg(r.moves.done.size()).arg(r.plan.moves.size()));
}

}  // namespace guestfrag::gui
