// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/plan_panel.hpp"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include "app/gui/files_model.hpp"
#include "core/estimate/guest_model.hpp"
#include "core/estimate/workload.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::gui {

namespace {

/// An optional size field: empty means "no limit".
bool read_size(const QLineEdit* edit, const QString& what, std::optional<std::uint64_t>& out, QString* error) {
    const QString text = edit->text().trimmed();
    if (text.isEmpty()) return true;
    out = parse_size(text.toStdString());
    if (!out && error) *error = QObject::tr("%1: '%2' is not a size (e.g. 4096, 64K, 1MiB, 2G)").arg(what, text);
    return out.has_value();
}

QString row(const QString& name, const QString& before, const QString& after) {
    return QStringLiteral("<tr><td>%1</td><td align=right>%2</td><td>&nbsp;→&nbsp;</td><td align=right>%3</td></tr>")
        .arg(name, before, after);
}

}  // namespace

PlanPanel::PlanPanel(QWidget* parent)
    : QWidget(parent),
      strategy_(new QComboBox),
      strategy_note_(new QLabel),
      order_(new QComboBox),
      max_growth_(new QLineEdit),
      max_moved_(new QLineEdit),
      dedup_chunks_(new QLineEdit(QStringLiteral("4K,8K,16K,32K"))),
      workload_(new QLineEdit(QStringLiteral("scan"))),
      guest_(new QComboBox),
      plan_button_(new QPushButton(tr("Plan"))),
      apply_button_(new QPushButton(tr("Apply to a copy…"))),
      judgement_(new QLabel),
      summary_(new QLabel) {
    for (const Strategy strategy : kStrategies) {
        const std::string_view name = strategy_name(strategy);
        strategy_->addItem(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())));
    }
    // Editable: trace:FILE names a host file; the common choices are listed.
    order_->setEditable(true);
    for (const char* order : {"mft", "path", "size", "trace:@layout", "trace:@prefetch"})
        order_->addItem(QString::fromLatin1(order));
    order_->setToolTip(
        tr("The order defrag, consolidate and optimize lay files out in: mft (what a scan reads), "
           "path (a tree walk), size (packs free space best) or trace:SOURCE (as the workload "
           "trace: takes it; traced files first, in trace order)"));
    max_growth_->setPlaceholderText(tr("no limit"));
    max_moved_->setPlaceholderText(tr("no limit"));
    workload_->setToolTip(
        tr("scan (scan:mft), scan:path, trace:SOURCE (a path list, .pf, Layout.ini, @prefetch, @layout), "
           "write:N, "
           "fio:OPTIONS or install:N[,writers=W,chunk=SIZE]"));
    for (const GuestProfile& guest : guest_profiles())
        guest_->addItem(QString::fromUtf8(guest.name.data(), static_cast<qsizetype>(guest.name.size())));
    guest_->setToolTip(
        tr("How the guest's reads reach the virtual disk (docs/estimate.md 1.1): windows (each file's "
           "cache, 64 KiB reads), linux-ntfs3g (the disk's cache, read-ahead past a file's end), "
           "linux-ntfs3, or raw (each file's extents as they are)"));
    summary_->setTextFormat(Qt::RichText);
    summary_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    summary_->setWordWrap(true);

    auto* form = new QFormLayout;
    form->addRow(tr("Strategy"), strategy_);
    form->addRow(QString(), strategy_note_);
    form->addRow(tr("Order"), order_);
    strategy_note_->setVisible(false);
    strategy_note_->setWordWrap(true);  // the panel is narrow: a long note wraps, never cuts off
    form->addRow(tr("Max growth"), max_growth_);
    form->addRow(tr("Max moved"), max_moved_);
    form->addRow(tr("Dedup chunks"), dedup_chunks_);
    form->addRow(tr("Workload"), workload_);
    form->addRow(tr("Guest"), guest_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(plan_button_, 1);
    buttons->addWidget(apply_button_, 1);
    apply_button_->setToolTip(tr("Carry the plan out on a new disk (the image is only read) and verify it"));
    apply_button_->setEnabled(false);
    layout->addLayout(buttons);
    judgement_->setObjectName(QStringLiteral("planJudgement"));
    judgement_->setWordWrap(true);
    judgement_->setVisible(false);
    layout->addWidget(judgement_);
    // A plan's notes can run past the panel's height at the default window size: they scroll.
    auto* summary_area = new QScrollArea;
    summary_area->setWidget(summary_);
    summary_area->setWidgetResizable(true);
    summary_area->setFrameShape(QFrame::NoFrame);
    summary_area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(summary_area, 1);

    connect(plan_button_, &QPushButton::clicked, this, &PlanPanel::planRequested);
    connect(apply_button_, &QPushButton::clicked, this, &PlanPanel::applyRequested);
    connect(strategy_, &QComboBox::activated, this, [this] {
        strategy_chosen_ = true;
        strategy_note_->setVisible(false);
    });
    // thin-safe and shrink place by what is allocated: no order to choose.
    // Each strategy starts from its own default order (mft; size for optimize) until the
    // user picks one.
    connect(order_, &QComboBox::activated, this, [this] { order_chosen_ = true; });
    connect(order_->lineEdit(), &QLineEdit::textEdited, this, [this] { order_chosen_ = true; });
    connect(strategy_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
        const Strategy strategy = parse_strategy(name.toStdString()).value_or(Strategy::Defrag);
        order_->setEnabled(takes_order(strategy));
        if (const auto order = default_order(strategy); order && !order_chosen_)
            order_->setCurrentText(QString::fromStdString(order->text()));
    });
}

std::optional<PlanRequest> PlanPanel::request(QString* error) const {
    PlanRequest r;
    r.options.strategy = parse_strategy(strategy_->currentText().toStdString()).value_or(Strategy::Defrag);
    if (takes_order(r.options.strategy)) {
        try {
            r.options.order = parse_order(order_->currentText().trimmed().toStdString());
        } catch (const Error& e) {
            if (error) *error = tr("Order: %1").arg(QString::fromStdString(e.what()));
            return std::nullopt;
        }
    }
    if (!read_size(max_growth_, tr("Max growth"), r.options.max_growth, error)) return std::nullopt;
    if (!read_size(max_moved_, tr("Max moved"), r.options.max_moved, error)) return std::nullopt;
    r.impact.dedup_chunks.clear();
    for (const QString& part : dedup_chunks_->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const auto size = parse_size(part.trimmed().toStdString());
        if (!size) {
            if (error) *error = tr("Dedup chunks: '%1' is not a size").arg(part.trimmed());
            return std::nullopt;
        }
        r.impact.dedup_chunks.push_back(*size);
    }
    r.workload = workload_->text().trimmed().toStdString();
    r.guest = *find_guest_profile(guest_->currentText().toStdString());  // the list holds only profiles
    try {
        (void)parse_workload(r.workload);
    } catch (const Error& e) {
        if (error) *error = tr("Workload: %1").arg(QString::fromStdString(e.what()));
        return std::nullopt;
    }
    return r;
}

void PlanPanel::set_strategy(const std::string& name) {
    const int index = strategy_->findText(QString::fromStdString(name));
    if (index < 0) return;
    strategy_->setCurrentIndex(index);
    strategy_chosen_ = true;
    strategy_note_->clear();
    strategy_note_->setVisible(false);
}

void PlanPanel::suggest_strategy(Strategy strategy) {
    if (strategy_chosen_) return;
    const std::string_view name = strategy_name(strategy);
    strategy_->setCurrentIndex(strategy_->findText(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()))));
    // The core's choice for this disk (as `guestfrag report` makes it).
    // The verdict above the map weighs every plan; this is only the first one shown.
    strategy_note_->setText(strategy == Strategy::Defrag ? tr("first shown: thick disk")
                                                         : tr("first shown: no growth on a thin or cloned disk"));
    strategy_note_->setVisible(true);
}

bool PlanPanel::adopt_verdict_plan(Strategy strategy, const std::string& order) {
    if (strategy_chosen_ || order_chosen_) return false;
    const std::string_view name = strategy_name(strategy);
    const QString strategy_text = QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
    const QString order_text = QString::fromStdString(order);
    const bool changed = strategy_->currentText() != strategy_text ||
                         (!order.empty() && order_->currentText().trimmed() != order_text);
    strategy_->setCurrentIndex(strategy_->findText(strategy_text));
    if (!order.empty()) order_->setCurrentText(order_text);
    strategy_note_->setText(tr("the verdict's plan"));
    strategy_note_->setVisible(true);
    return changed;
}

void PlanPanel::show_judgement(const QString& text) {
    judgement_->setText(text);
    judgement_->setVisible(!text.isEmpty());
}

void PlanPanel::set_busy(bool busy) { plan_button_->setEnabled(!busy); }

void PlanPanel::set_apply_enabled(bool enabled) { apply_button_->setEnabled(enabled); }

void PlanPanel::show_result(const PlanResult* result, const VolumeAnalysis* before) {
    if (!result || !before) {
        summary_->clear();
        return;
    }
    const PlanSummary& s = result->plan.summary;
    QString html = tr("<b>%1</b>: %2 moves, %3 moved").arg(QString::fromStdString(result->plan.strategy)).arg(s.moves).arg(size_text(s.moved_bytes));
    html += QStringLiteral("<table>");
    html += row(tr("fragments"), QString::number(s.fragments_before), QString::number(s.fragments_after));
    html += row(tr("fragmented streams"), QString::number(s.fragmented_streams_before),
                QString::number(s.fragmented_streams_after));
    html += row(tr("free extents"), QString::number(s.free_extents_before), QString::number(s.free_extents_after));
    html += row(tr("free space fragmentation"), QString::number(before->free_space.fragmentation_percent, 'f', 1) + "%",
                QString::number(s.free_space_fragmentation_percent_after.value_or(0), 'f', 1) + "%");
    html += row(tr("reclaimable"), size_text(s.reclaimable_bytes_before), size_text(s.reclaimable_bytes_after));
    html += QStringLiteral("</table>");
    html += tr("thin growth %1, clone delta growth %2").arg(size_text(s.thin_growth_bytes), size_text(s.clone_delta_growth_bytes));
    if (!result->plan.skipped.empty()) html += tr("<br>%1 streams skipped").arg(result->plan.skipped.size());
    for (const std::string& note : result->plan.notes)
        html += QStringLiteral("<br><i>%1</i>").arg(QString::fromStdString(note).toHtmlEscaped());
    summary_->setText(html);
}

}  // namespace guestfrag::gui
