// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/compact_progress_dialog.hpp"

#include <algorithm>

#include <QFileInfo>
#include <QPushButton>

#include "app/gui/files_model.hpp"

namespace guestfrag::gui {

std::size_t compact_step_count(const CompactOptions& options, std::size_t volumes) {
    const std::vector<CompactStep> steps = compact_steps(options);
    const auto per_volume = std::count_if(steps.begin(), steps.end(), [](CompactStep s) {
        return s == CompactStep::AnalyseOutput || s == CompactStep::Sparsify || s == CompactStep::HashInput ||
               s == CompactStep::HashOutput;
    });
    return steps.size() + static_cast<std::size_t>(per_volume) * (std::max<std::size_t>(volumes, 1) - 1);
}

CompactProgressDialog::CompactProgressDialog(std::shared_ptr<const CompactMeter> meter,
                                             std::shared_ptr<const RateLimiter> limiter, std::size_t steps,
                                             const QString& output, QWidget* parent)
    : NewDiskProgressDialog(shown_of(meter, steps), std::move(limiter),
                            tr("Compacting into %1").arg(QFileInfo(output).fileName()), output, parent),
      meter_(std::move(meter)) {
    open_button()->setText(tr("Open the output"));
}

void CompactProgressDialog::show_result(const CompactResult& r) {
    result_ = r;
    add_row(tr("Output"), QString::fromStdString(r.output));
    add_row(tr("Format"), QString::fromLatin1(compact_format_name(r.format)));
    add_row(tr("Granule"), bytes_text(r.granule));
    // The granules the storage under each stage allocates: sparsifying leaves out the free
    // clusters, packing empties more granules, the output is what is actually stored.
    add_row(tr("Granules in use"), r.packed ? tr("%1 input → %2 sparsified → %3 packed → %4 output")
                                                  .arg(r.granules_input)
                                                  .arg(r.granules_sparsified)
                                                  .arg(r.granules_packed)
                                                  .arg(r.granules_output)
                                            : tr("%1 input → %2 sparsified → %3 output (not packed)")
                                                  .arg(r.granules_input)
                                                  .arg(r.granules_sparsified)
                                                  .arg(r.granules_output));
    if (r.packed)
        add_row(
            tr("Packing gave back"),
            tr("%n granule(s) more than sparsifying alone", nullptr,
               static_cast<int>(r.granules_sparsified - std::min(r.granules_sparsified, r.granules_packed))));
    add_row(tr("Host bytes"),
            tr("%1 before → %2 after").arg(bytes_text(r.host_bytes_input), bytes_text(r.host_bytes_output)));
    add_row(tr("Disk data kept"), bytes_text(r.data_bytes_output));
    add_row(tr("Output file size"), bytes_text(r.output_file_bytes));
    bool verified = !r.volumes.empty();
    for (const CompactVolume& v : r.volumes) {
        const QString partition = tr("Partition %1").arg(v.partition);
        add_row(tr("%1: moves done").arg(partition), r.packed ? tr("%1 of %2 (%3 moved), %4 skipped")
                                                                    .arg(v.moves.done.size())
                                                                    .arg(v.plan.moves.size())
                                                                    .arg(size_text(v.moves.bytes_copied))
                                                                    .arg(v.moves.skipped.size())
                                                              : tr("none (packing off)"));
        add_skipped_rows(v.moves.skipped, tr("%1: skipped: %2").arg(partition, QStringLiteral("%1")));
        add_row(tr("%1: NTFS-free left out").arg(partition), bytes_text(v.free_bytes));
        verified = verified && v.verification.has_value();
        add_row(tr("%1: verification").arg(partition),
                v.verification ? tr("passed: %1 streams identical, allocation as predicted, $Bitmap and "
                                    "$MFTMirr match; fragments %2 before → %3 after")
                                     .arg(v.verification->streams_hashed)
                                     .arg(v.verification->fragments_before)
                                     .arg(v.verification->fragments_after)
                               : tr("not verified (turned off)"));
    }
    add_row(tr("Time"), tr("%1 s").arg(r.seconds, 0, 'f', 1));
    for (const std::string& warning : r.warnings)
        add_row(tr("Input warning"), QString::fromStdString(warning));
    const QString headline = tr("Compacted: %1 on the host instead of %2")
                                 .arg(size_text(r.host_bytes_output), size_text(r.host_bytes_input));
    succeed(verified ? tr("%1; the output is verified.").arg(headline)
                     : tr("%1 (not verified).").arg(headline));
}

}  // namespace guestfrag::gui
