// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <optional>

#include <QDialog>
#include <QString>

#include "app/gui/apply_meter.hpp"
#include "core/error.hpp"
#include "core/io/rate_limiter.hpp"
#include "pipeline/apply.hpp"

class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTimer;

namespace guestfrag::gui {

/// What a running apply shows of `snapshot` when `steps` steps run in all: the step
/// ("Step 2 of 6: copying the disk") and its progress in the step's unit ("at 12.0 MiB of
/// the 48.0 MiB disk" for the copy, bytes for the overlay, moves, MFT records, streams),
/// with the rate of the overlay's bytes and the time left at the step's pace so far
/// ("· about 9 s left"; no estimate in a step's first second).
[[nodiscard]] QString apply_step_text(const ApplyMeter::Snapshot& snapshot, std::size_t steps);
[[nodiscard]] QString apply_detail_text(const ApplyMeter::Snapshot& snapshot);
/// The bytes the run has copied so far, all steps together (what passed through its rate
/// limiter: the raw copy's reads, the moves' blocks, the overlay's compared clusters), and
/// the limit when there is one (`rate` bytes per second, 0: none).
[[nodiscard]] QString apply_copied_text(std::uint64_t copied, std::uint64_t rate);

/// Follows one apply_to_copy run (the window starts it and owns this dialog): the step, a
/// progress bar, bytes and time left, and Cancel; then the outcome: moves done and
/// skipped by reason, bytes moved and written, time and the verification's figures, or
/// the one-line reason it failed or was cancelled. On success it offers to open the
/// result. Closing it while the work runs cancels the work.
class ApplyProgressDialog : public QDialog {
    Q_OBJECT
public:
    enum class State { Running, Cancelling, Succeeded, Failed, Cancelled };

    /// `meter` and `limiter` are those of the run (shared with its worker); `steps`:
    /// apply_steps of its options.
    ApplyProgressDialog(std::shared_ptr<const ApplyMeter> meter, std::shared_ptr<const RateLimiter> limiter,
                        std::size_t steps, const QString& output, QWidget* parent = nullptr);

    /// Shows what apply_to_copy returned.
    void show_result(const ApplyResult& result);
    /// Shows why it failed (Cancelled: that nothing was written).
    void show_error(const Error& error);

    [[nodiscard]] State state() const { return state_; }
    [[nodiscard]] const std::optional<ApplyResult>& result() const { return result_; }
    [[nodiscard]] const ApplyMeter& meter() const { return *meter_; }
    /// The outcome row named `label` ("Moves done", "Fragments", ...), empty when none.
    [[nodiscard]] QString outcome(const QString& label) const;
    [[nodiscard]] QTableWidget* outcome_table() const { return outcome_; }
    /// The status line: the step while running, then the outcome's headline or the error.
    [[nodiscard]] QString message() const;
    [[nodiscard]] QPushButton* cancel_button() const { return cancel_; }
    [[nodiscard]] QPushButton* open_button() const { return open_; }

    void reject() override;

signals:
    /// Cancel was pressed (or the dialog closed) while the work runs.
    void cancelRequested();
    /// "Open the result" was pressed.
    void openRequested();

private:
    void refresh();
    void finish(State state, const QString& message);
    void add_row(const QString& label, const QString& value);

    std::shared_ptr<const ApplyMeter> meter_;
    std::shared_ptr<const RateLimiter> limiter_;
    std::size_t steps_;
    State state_ = State::Running;
    std::optional<ApplyResult> result_;
    QTimer* timer_;
    QLabel* step_;
    QProgressBar* bar_;
    QLabel* detail_;
    QLabel* copied_;
    QTableWidget* outcome_;
    QPushButton* cancel_;
    QPushButton* open_;
    QPushButton* close_;
};

}  // namespace guestfrag::gui
