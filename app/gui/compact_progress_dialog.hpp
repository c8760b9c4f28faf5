// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <optional>

#include <QString>

#include "app/gui/new_disk_progress_dialog.hpp"
#include "app/gui/step_meter.hpp"
#include "pipeline/compact.hpp"

namespace guestfrag::gui {

/// The steps a compaction with `options` begins on a disk of `volumes` NTFS volumes:
/// compact_steps, whose per-volume steps (AnalyseOutput, Sparsify, HashInput, HashOutput)
/// run once per volume.
[[nodiscard]] std::size_t compact_step_count(const CompactOptions& options, std::size_t volumes);

/// Follows one compact_to_copy run: its steps (CompactStep), then the outcome: the granule,
/// granules in use from the input to the output, the host bytes before and after, and per
/// volume the packing moves and the verification. On success it offers to open the output.
class CompactProgressDialog : public NewDiskProgressDialog {
    Q_OBJECT
public:
    /// `meter` and `limiter` are those of the run (shared with its worker); `steps`:
    /// compact_step_count of its options.
    CompactProgressDialog(std::shared_ptr<const CompactMeter> meter,
                          std::shared_ptr<const RateLimiter> limiter, std::size_t steps,
                          const QString& output, QWidget* parent = nullptr);

    /// Shows what compact_to_copy returned.
    void show_result(const CompactResult& result);

    [[nodiscard]] const std::optional<CompactResult>& result() const { return result_; }
    [[nodiscard]] const CompactMeter& meter() const { return *meter_; }

private:
    std::shared_ptr<const CompactMeter> meter_;
    std::optional<CompactResult> result_;
};

}  // namespace guestfrag::gui
