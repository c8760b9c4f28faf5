// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/apply_progress_dialog.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/files_model.hpp"

namespace guestfrag::gui {

namespace {

/// What a step's (done, total) count (pipeline/apply.hpp says it per step).
enum class Unit { Records, DiskOffset, Moves, Streams };

struct StepInfo {
    const char* name;
    Unit unit;
};

StepInfo info(ApplyStep step) {
    switch (step) {
        case ApplyStep::Analyse:
            return {QT_TR_NOOP("analysing the input"), Unit::Records};
        case ApplyStep::Copy:
            return {QT_TR_NOOP("copying the disk"), Unit::DiskOffset};
        case ApplyStep::Move:
            return {QT_TR_NOOP("moving clusters"), Unit::Moves};
        case ApplyStep::AnalyseOutput:
            return {QT_TR_NOOP("verifying: analysing the output"), Unit::Records};
        case ApplyStep::HashInput:
            return {QT_TR_NOOP("verifying: hashing the input's streams"), Unit::Streams};
        case ApplyStep::HashOutput:
            return {QT_TR_NOOP("verifying: hashing the output's streams"), Unit::Streams};
    }
    return {"", Unit::Records};
}

/// "45 s", "3 min 5 s", "2 h 10 min".
QString duration_text(double seconds) {
    const auto s = static_cast<long long>(std::ceil(std::max(0.0, seconds)));
    if (s < 60) return QObject::tr("%1 s").arg(s);
    if (s < 3600) return QObject::tr("%1 min %2 s").arg(s / 60).arg(s % 60);
    return QObject::tr("%1 h %2 min").arg(s / 3600).arg(s % 3600 / 60);
}

/// "12.0 MiB (12582912 bytes)": the size people read and the exact count.
QString bytes_text(std::uint64_t bytes) {
    return QObject::tr("%1 (%2 bytes)").arg(size_text(bytes)).arg(bytes);
}

/// Seconds a step waits before it estimates the time left: the first moments of a step
/// (opening files, a first burst the rate limiter allows) say little about its pace.
constexpr double kEstimateAfter = 1.0;

}  // namespace

QString apply_step_text(const ApplyMeter::Snapshot& snapshot, std::size_t steps) {
    if (!snapshot.step) return QObject::tr("Starting…");
    return QObject::tr("Step %1 of %2: %3")
        .arg(snapshot.step_number)
        .arg(std::max(steps, snapshot.step_number))
        .arg(QObject::tr(info(*snapshot.step).name));
}

QString apply_detail_text(const ApplyMeter::Snapshot& snapshot) {
    if (!snapshot.step || snapshot.total == 0) return {};
    const Unit unit = info(*snapshot.step).unit;
    QString text;
    switch (unit) {
        case Unit::DiskOffset:
            text =
                QObject::tr("at %1 of the %2 disk").arg(size_text(snapshot.done), size_text(snapshot.total));
            break;
        case Unit::Records:
            text = QObject::tr("%1 of %2 MFT records").arg(snapshot.done).arg(snapshot.total);
            break;
        case Unit::Moves:
            text = QObject::tr("%1 of %2 moves").arg(snapshot.done).arg(snapshot.total);
            break;
        case Unit::Streams:
            text = QObject::tr("%1 of %2 streams").arg(snapshot.done).arg(snapshot.total);
            break;
    }
    if (snapshot.done == 0 || snapshot.seconds < kEstimateAfter || snapshot.done >= snapshot.total)
        return text;
    const double done = static_cast<double>(snapshot.done);
    const double left = snapshot.seconds * static_cast<double>(snapshot.total - snapshot.done) / done;
    return text + QObject::tr(" · about %1 left").arg(duration_text(left));
}

QString apply_copied_text(std::uint64_t copied, std::uint64_t rate) {
    QString text = QObject::tr("Data copied so far: %1").arg(size_text(copied));
    if (rate != 0) text += QObject::tr(" (limited to %1/s)").arg(size_text(rate));
    return text;
}

ApplyProgressDialog::ApplyProgressDialog(std::shared_ptr<const ApplyMeter> meter,
                                         std::shared_ptr<const RateLimiter> limiter, std::size_t steps,
                                         const QString& output, QWidget* parent)
    : QDialog(parent),
      meter_(std::move(meter)),
      limiter_(std::move(limiter)),
      steps_(steps),
      timer_(new QTimer(this)),
      step_(new QLabel),
      bar_(new QProgressBar),
      detail_(new QLabel),
      copied_(new QLabel),
      outcome_(new QTableWidget(0, 2)),
      cancel_(new QPushButton(tr("Cancel"))),
      open_(new QPushButton(tr("Open the result"))),
      close_(new QPushButton(tr("Close"))) {
    setWindowTitle(tr("Applying the plan to %1").arg(QFileInfo(output).fileName()));
    auto* target = new QLabel(tr("Writing %1").arg(output));
    target->setWordWrap(true);
    step_->setWordWrap(true);
    detail_->setWordWrap(true);
    bar_->setRange(0, 0);
    outcome_->setHorizontalHeaderLabels({tr("Outcome"), tr("Value")});
    outcome_->verticalHeader()->setVisible(false);
    outcome_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    outcome_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    outcome_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    outcome_->setWordWrap(true);
    outcome_->setVisible(false);
    open_->setVisible(false);
    close_->setVisible(false);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(open_);
    buttons->addWidget(cancel_);
    buttons->addWidget(close_);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(target);
    layout->addWidget(step_);
    layout->addWidget(bar_);
    layout->addWidget(detail_);
    layout->addWidget(copied_);
    layout->addWidget(outcome_, 1);
    layout->addLayout(buttons);
    resize(640, 200);

    connect(cancel_, &QPushButton::clicked, this, &ApplyProgressDialog::reject);
    connect(close_, &QPushButton::clicked, this, &ApplyProgressDialog::reject);
    connect(open_, &QPushButton::clicked, this, [this] {
        emit openRequested();
        QDialog::accept();
    });
    timer_->setInterval(100);
    connect(timer_, &QTimer::timeout, this, &ApplyProgressDialog::refresh);
    timer_->start();
    refresh();
}

void ApplyProgressDialog::refresh() {
    const ApplyMeter::Snapshot s = meter_->snapshot();
    if (state_ == State::Running) step_->setText(apply_step_text(s, steps_));
    detail_->setText(apply_detail_text(s));
    copied_->setText(apply_copied_text(limiter_->requested(), limiter_->rate()));
    if (s.total == 0) {
        bar_->setRange(0, 0);  // busy until the step's first report
        return;
    }
    bar_->setRange(0, 1000);
    bar_->setValue(static_cast<int>(std::min(s.done, s.total) * 1000 / s.total));
}

void ApplyProgressDialog::reject() {
    if (state_ == State::Running) {
        state_ = State::Cancelling;
        step_->setText(tr("Cancelling…"));
        cancel_->setEnabled(false);
        emit cancelRequested();
        return;
    }
    if (state_ != State::Cancelling) QDialog::reject();
}

void ApplyProgressDialog::add_row(const QString& label, const QString& value) {
    const int row = outcome_->rowCount();
    outcome_->insertRow(row);
    outcome_->setItem(row, 0, new QTableWidgetItem(label));
    outcome_->setItem(row, 1, new QTableWidgetItem(value));
}

QString ApplyProgressDialog::outcome(const QString& label) const {
    for (int row = 0; row < outcome_->rowCount(); ++row)
        if (outcome_->item(row, 0)->text() == label) return outcome_->item(row, 1)->text();
    return {};
}

QString ApplyProgressDialog::message() const { return step_->text(); }

void ApplyProgressDialog::finish(State state, const QString& message) {
    state_ = state;
    timer_->stop();
    step_->setText(message);
    bar_->setVisible(false);
    detail_->setVisible(false);
    copied_->setVisible(false);
    cancel_->setVisible(false);
    close_->setVisible(true);
    close_->setDefault(true);
}

void ApplyProgressDialog::show_result(const ApplyResult& r) {
    result_ = r;
    const bool overlay = r.format == ApplyOutputFormat::Qcow2;
    add_row(tr("Output"), QString::fromStdString(r.output));
    add_row(tr("Format"), overlay ? tr("qcow2 overlay backed by the input") : tr("raw disk"));
    add_row(tr("Partition"), QString::number(r.partition));
    add_row(tr("Moves done"), tr("%1 of %2").arg(r.moves.done.size()).arg(r.plan.moves.size()));
    add_row(tr("Moves skipped"), QString::number(r.moves.skipped.size()));
    std::map<std::string, std::size_t> reasons;
    for (const SkippedMove& s : r.moves.skipped) ++reasons[s.reason];
    for (const auto& [reason, n] : reasons)
        add_row(tr("Skipped: %1").arg(QString::fromStdString(reason)), QString::number(n));
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
    outcome_->resizeRowsToContents();
    outcome_->setVisible(true);
    open_->setVisible(true);
    resize(width(), std::max(height(), 420));
    finish(
        State::Succeeded,
        r.verification
            ? tr("Applied %1 of %2 moves; the copy is verified.")
                  .arg(r.moves.done.size())
                  .arg(r.plan.moves.size())
            : tr("Applied %1 of %2 moves (not verified).").arg(r.moves.done.size()).arg(r.plan.moves.size()));
}

void ApplyProgressDialog::show_error(const Error& error) {
    if (error.kind() == ErrorKind::Cancelled)
        return finish(State::Cancelled, tr("Cancelled: no output was written."));
    finish(State::Failed, tr("Failed: %1 (no output was written)").arg(QString::fromStdString(error.what())));
}

}  // namespace guestfrag::gui
