// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/new_disk_progress_dialog.hpp"

#include <algorithm>
#include <map>
#include <string>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/files_model.hpp"
#include "pipeline/step_info.hpp"

namespace guestfrag::gui {

template <typename Step>
QString step_text(const StepSnapshot<Step>& snapshot, std::size_t steps) {
    if (!snapshot.step) return QObject::tr("Starting…");
    return QObject::tr("Step %1 of %2: %3")
        .arg(snapshot.step_number)
        .arg(std::max(steps, snapshot.step_number))
        .arg(QObject::tr(step_info(*snapshot.step).name.data()));
}

template <typename Step>
QString step_detail_text(const StepSnapshot<Step>& snapshot) {
    if (!snapshot.step || snapshot.total == 0) return {};
    QString text;
    switch (step_info(*snapshot.step).unit) {
        case StepUnit::None:
            return {};
        case StepUnit::DiskOffset:
            text =
                QObject::tr("at %1 of the %2 disk").arg(size_text(snapshot.done), size_text(snapshot.total));
            break;
        case StepUnit::Records:
            text = QObject::tr("%1 of %2 MFT records").arg(snapshot.done).arg(snapshot.total);
            break;
        case StepUnit::Moves:
            text = QObject::tr("%1 of %2 moves").arg(snapshot.done).arg(snapshot.total);
            break;
        case StepUnit::Streams:
            text = QObject::tr("%1 of %2 streams").arg(snapshot.done).arg(snapshot.total);
            break;
    }
    if (const auto left = seconds_left(snapshot.seconds, snapshot.done, snapshot.total))
        text += QObject::tr(" · about %1 left").arg(QString::fromStdString(duration_text(*left)));
    return text;
}

template QString step_text(const StepSnapshot<ApplyStep>&, std::size_t);
template QString step_text(const StepSnapshot<CompactStep>&, std::size_t);
template QString step_detail_text(const StepSnapshot<ApplyStep>&);
template QString step_detail_text(const StepSnapshot<CompactStep>&);

QString copied_text(std::uint64_t copied, std::uint64_t rate) {
    QString text = QObject::tr("Data copied so far: %1").arg(size_text(copied));
    if (rate != 0) text += QObject::tr(" (limited to %1/s)").arg(size_text(rate));
    return text;
}

QString bytes_text(std::uint64_t bytes) {
    return QObject::tr("%1 (%2 bytes)").arg(size_text(bytes)).arg(bytes);
}

NewDiskProgressDialog::NewDiskProgressDialog(std::function<Shown()> poll,
                                             std::shared_ptr<const RateLimiter> limiter, const QString& title,
                                             const QString& output, QWidget* parent)
    : QDialog(parent),
      poll_(std::move(poll)),
      limiter_(std::move(limiter)),
      timer_(new QTimer(this)),
      step_(new QLabel),
      bar_(new QProgressBar),
      detail_(new QLabel),
      copied_(new QLabel),
      outcome_(new QTableWidget(0, 2)),
      cancel_(new QPushButton(tr("Cancel"))),
      open_(new QPushButton(tr("Open the result"))),
      close_(new QPushButton(tr("Close"))) {
    setWindowTitle(title);
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
    // Each row as tall as its value wrapped at the width its column has now, which is
    // known only once the table is laid out and changes with the dialog's width: sized
    // once, before the table was shown, a long value was cut off with an ellipsis.
    outcome_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
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

    connect(cancel_, &QPushButton::clicked, this, &NewDiskProgressDialog::reject);
    connect(close_, &QPushButton::clicked, this, &NewDiskProgressDialog::reject);
    connect(open_, &QPushButton::clicked, this, [this] {
        emit openRequested();
        QDialog::accept();
    });
    timer_->setInterval(100);
    connect(timer_, &QTimer::timeout, this, &NewDiskProgressDialog::refresh);
    timer_->start();
    refresh();
}

void NewDiskProgressDialog::refresh() {
    const Shown s = poll_();
    if (state_ == State::Running) step_->setText(s.step);
    detail_->setText(s.detail);
    copied_->setText(copied_text(limiter_->requested(), limiter_->rate()));
    if (s.total == 0) {
        bar_->setRange(0, 0);  // busy until the step's first report
        return;
    }
    bar_->setRange(0, 1000);
    bar_->setValue(static_cast<int>(std::min(s.done, s.total) * 1000 / s.total));
}

void NewDiskProgressDialog::reject() {
    if (state_ == State::Running) {
        state_ = State::Cancelling;
        step_->setText(tr("Cancelling…"));
        cancel_->setEnabled(false);
        emit cancelRequested();
        return;
    }
    if (state_ != State::Cancelling) QDialog::reject();
}

void NewDiskProgressDialog::add_row(const QString& label, const QString& value) {
    const int row = outcome_->rowCount();
    outcome_->insertRow(row);
    outcome_->setItem(row, 0, new QTableWidgetItem(label));
    outcome_->setItem(row, 1, new QTableWidgetItem(value));
}

void NewDiskProgressDialog::add_skipped_rows(const std::vector<SkippedMove>& skipped, const QString& label) {
    std::map<std::string, std::size_t> reasons;
    for (const SkippedMove& s : skipped) ++reasons[s.reason];
    for (const auto& [reason, n] : reasons)
        add_row(label.arg(QString::fromStdString(reason)), QString::number(n));
}

QString NewDiskProgressDialog::outcome(const QString& label) const {
    for (int row = 0; row < outcome_->rowCount(); ++row)
        if (outcome_->item(row, 0)->text() == label) return outcome_->item(row, 1)->text();
    return {};
}

QString NewDiskProgressDialog::message() const { return step_->text(); }

QString NewDiskProgressDialog::detail() const { return detail_->text(); }

void NewDiskProgressDialog::finish(State state, const QString& message) {
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

void NewDiskProgressDialog::succeed(const QString& headline) {
    outcome_->setVisible(true);
    open_->setVisible(true);
    resize(width(), std::max(height(), 420));
    finish(State::Succeeded, headline);
}

void NewDiskProgressDialog::show_error(const Error& error) {
    if (error.kind() == ErrorKind::Cancelled)
        return finish(State::Cancelled, tr("Cancelled: no output was written."));
    finish(State::Failed, tr("Failed: %1 (no output was written)").arg(QString::fromStdString(error.what())));
}

}  // namespace guestfrag::gui
