// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <QDialog>
#include <QString>

#include "app/gui/step_meter.hpp"
#include "core/error.hpp"
#include "core/io/rate_limiter.hpp"

class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTimer;

namespace guestfrag::gui {

/// What a running apply or compaction shows of `snapshot` when `steps` steps run in all:
/// the step by its name ("Step 2 of 6: copying the disk"). Defined for ApplyStep and
/// CompactStep.
template <typename Step>
[[nodiscard]] QString step_text(const StepSnapshot<Step>& snapshot, std::size_t steps);
/// The step's progress in its unit ("at 12.0 MiB of the 48.0 MiB disk" for a copy or a
/// sparsifying pass, moves, MFT records, streams; nothing for a step without counts) with the
/// time left at the step's pace so far ("· about 9 s left"; no estimate in a step's first
/// second). Defined for ApplyStep and CompactStep.
template <typename Step>
[[nodiscard]] QString step_detail_text(const StepSnapshot<Step>& snapshot);
/// The bytes the run has copied so far, all steps together (what passed through its rate
/// limiter), and the limit when there is one (`rate` bytes per second, 0: none).
[[nodiscard]] QString copied_text(std::uint64_t copied, std::uint64_t rate);
/// "12.0 MiB (12582912 bytes)": the size people read and the exact count.
[[nodiscard]] QString bytes_text(std::uint64_t bytes);

/// Follows one run of a pipeline use case that writes a new disk (the window starts it and
/// owns the dialog): the step, a progress bar, bytes and time left, and Cancel; then the
/// outcome table a subclass fills from the run's result, or the one-line reason it failed
/// or was cancelled. On success it offers to open the output. Closing it while the work
/// runs cancels the work.
class NewDiskProgressDialog : public QDialog {
    Q_OBJECT
public:
    enum class State { Running, Cancelling, Succeeded, Failed, Cancelled };

    /// Where the run is, as the dialog shows it.
    struct Shown {
        QString step;    ///< step_text
        QString detail;  ///< step_detail_text
        std::uint64_t done = 0;
        std::uint64_t total = 0;  ///< 0: no count yet (a busy bar)
    };

    /// Shows why the run failed (Cancelled: that nothing was written).
    void show_error(const Error& error);

    [[nodiscard]] State state() const { return state_; }
    /// The outcome row named `label` ("Moves done", "Host bytes", ...), empty when none.
    [[nodiscard]] QString outcome(const QString& label) const;
    [[nodiscard]] QTableWidget* outcome_table() const { return outcome_; }
    /// The status line: the step while running, then the outcome's headline or the error.
    [[nodiscard]] QString message() const;
    /// The line under the bar while running: where in the step and the time left.
    [[nodiscard]] QString detail() const;
    [[nodiscard]] QPushButton* cancel_button() const { return cancel_; }
    [[nodiscard]] QPushButton* open_button() const { return open_; }

    void reject() override;

signals:
    /// Cancel was pressed (or the dialog closed) while the work runs.
    void cancelRequested();
    /// The open button was pressed.
    void openRequested();

protected:
    /// `poll` says where the run is (called by the dialog's timer; shown_of makes it from a
    /// StepMeter), `limiter` is the run's; `title` names the dialog, `output` the file written.
    NewDiskProgressDialog(std::function<Shown()> poll, std::shared_ptr<const RateLimiter> limiter,
                          const QString& title, const QString& output, QWidget* parent);

    void add_row(const QString& label, const QString& value);
    /// One row per reason moves were skipped for, with their number; `label` holds a %-marker
    /// for the reason ("Skipped: %1").
    void add_skipped_rows(const std::vector<SkippedMove>& skipped, const QString& label);
    /// Shows the rows added, offers to open the output, and ends with `headline`.
    void succeed(const QString& headline);

private:
    void refresh();
    void finish(State state, const QString& message);

    std::function<Shown()> poll_;
    std::shared_ptr<const RateLimiter> limiter_;
    State state_ = State::Running;
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

/// What a NewDiskProgressDialog polls for a run whose steps `meter` records, `steps` of them
/// expected.
template <typename Step>
[[nodiscard]] std::function<NewDiskProgressDialog::Shown()> shown_of(
    std::shared_ptr<const StepMeter<Step>> meter, std::size_t steps) {
    return [meter = std::move(meter), steps] {
        const StepSnapshot<Step> s = meter->snapshot();
        return NewDiskProgressDialog::Shown{step_text(s, steps), step_detail_text(s), s.done, s.total};
    };
}

}  // namespace guestfrag::gui
