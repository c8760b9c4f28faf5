// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/plan_writes_panel.hpp"

#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include "app/gui/files_model.hpp"
#include "app/gui/provisioned_model.hpp"

namespace guestfrag::gui {

QString plan_writes_caption(const PlanWrites& w) {
    return QObject::tr("Carrying out the plan: its moves' reads and writes, in IOs of at most %1")
        .arg(size_text(w.max_io));
}

QStringList plan_writes_lines(const PlanWrites& w) {
    const IoStats& s = w.stats;
    const LayerProvisioning& p = w.provisioning;
    const std::string_view type = provisioning_name(p.type);
    // The CLI's rows, one to a line (data read and written share one): row name, figure,
    // then what the CLI adds after it in brackets.
    return {QObject::tr("IOs of the plan %1 (%2 reads, %3 writes)")
                .arg(s.ios)
                .arg(s.ios - s.writes)
                .arg(s.writes),
            QObject::tr("data read %1 · data written %2")
                .arg(size_text(s.bytes - s.written_bytes), size_text(s.written_bytes)),
            QObject::tr("provisioning %1%2, zeroing block %3: %4")
                .arg(QString::fromLatin1(type.data(), static_cast<qsizetype>(type.size())),
                     p.assumed ? QObject::tr(" (assumed)") : QString(), size_text(p.zero_block),
                     QString::fromStdString(p.basis)),
            QObject::tr("into written blocks %1 (their zeroing block already written)")
                .arg(size_text(w.into_written_bytes)),
            QObject::tr("into new blocks %1 (%2 first writes of a %3 block)")
                .arg(size_text(w.into_new_bytes))
                .arg(s.first_writes)
                .arg(size_text(s.zero_block))};
}

PlanWritesPanel::PlanWritesPanel(QWidget* parent)
    : QWidget(parent),
      caption_(new QLabel),
      details_(new QLabel),
      model_(new ProvisionedModel(this)),
      view_(provisioned_view(model_, tr("The plan's own reads and writes on eager-zeroed, lazy-zeroed and "
                                        "thin storage, as guestfrag impact prints them"))) {
    for (QLabel* label : {caption_, details_}) {
        label->setWordWrap(true);
        label->setTextFormat(Qt::PlainText);
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
    QFont bold = caption_->font();
    bold.setBold(true);
    caption_->setFont(bold);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(caption_);
    layout->addWidget(details_);
    layout->addWidget(view_, 1);
    show_result(nullptr);
}

void PlanWritesPanel::show_result(const PlanResult* result) {
    if (result && !result->has(Figure::Impact)) result = nullptr;  // not assessed yet
    const PlanWrites* writes = result && result->impact ? &result->impact->plan_writes : nullptr;
    model_->set_stats(writes ? &writes->stats : nullptr,
                      writes ? writes->provisioning.type : Provisioning::Eager);
    view_->resizeColumnsToContents();
    view_->setVisible(writes != nullptr);
    if (writes) {
        caption_->setText(plan_writes_caption(*writes));
        details_->setText(plan_writes_lines(*writes).join(QLatin1Char('\n')));
    } else {
        caption_->setText(result ? tr("Carrying out the plan") : QString());
        details_->setText(result ? tr("Not available: %1").arg(QString::fromStdString(result->impact_error))
                                 : QString());
    }
}

QString PlanWritesPanel::caption() const { return caption_->text(); }
QString PlanWritesPanel::details() const { return details_->text(); }

int PlanWritesPanel::table_width() const { return full_table_width(*view_); }

}  // namespace guestfrag::gui
