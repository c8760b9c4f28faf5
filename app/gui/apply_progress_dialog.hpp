// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <optional>

#include <QString>

#include "app/gui/new_disk_progress_dialog.hpp"
#include "app/gui/step_meter.hpp"
#include "pipeline/apply.hpp"

namespace guestfrag::gui {

/// What a running apply shows of `snapshot` when `steps` steps run in all: the step
/// ("Step 2 of 6: copying the disk") and its progress in the step's unit ("at 12.0 MiB of
/// the 48.0 MiB disk" for the copy, moves, MFT records, streams) with the time left at the
/// step's pace so far (step_text, step_detail_text).
[[nodiscard]] inline QString apply_step_text(const ApplyMeter::Snapshot& snapshot, std::size_t steps) {
    return step_text(snapshot, steps);
}
[[nodiscard]] inline QString apply_detail_text(const ApplyMeter::Snapshot& snapshot) {
    return step_detail_text(snapshot);
}
/// The bytes an apply has copied so far (the raw copy's reads, the moves' blocks, the
/// overlay's compared clusters) and its limit (copied_text).
[[nodiscard]] inline QString apply_copied_text(std::uint64_t copied, std::uint64_t rate) {
    return copied_text(copied, rate);
}

/// Follows one apply_to_copy run: its steps, then the outcome: moves done and skipped by
/// reason, bytes moved and written, time and the verification's figures. On success it
/// offers to open the result.
class ApplyProgressDialog : public NewDiskProgressDialog {
    Q_OBJECT
public:
    /// `meter` and `limiter` are those of the run (shared with its worker); `steps`:
    /// apply_steps of its options.
    ApplyProgressDialog(std::shared_ptr<const ApplyMeter> meter, std::shared_ptr<const RateLimiter> limiter,
                        std::size_t steps, const QString& output, QWidget* parent = nullptr);

    /// Shows what apply_to_copy returned.
    void show_result(const ApplyResult& result);

    [[nodiscard]] const std::optional<ApplyResult>& result() const { return result_; }
    [[nodiscard]] const ApplyMeter& meter() const { return *meter_; }

private:
    std::shared_ptr<const ApplyMeter> meter_;
    std::optional<ApplyResult> result_;
};

}  // namespace guestfrag::gui
