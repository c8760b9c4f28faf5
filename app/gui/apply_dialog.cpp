// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/apply_dialog.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "pipeline/sizes.hpp"

namespace guestfrag::gui {

namespace {

constexpr int kRaw = 0;
constexpr int kQcow2 = 1;

QString suffix_of(ApplyOutputFormat format) {
    return format == ApplyOutputFormat::Qcow2 ? QStringLiteral("qcow2") : QStringLiteral("img");
}

/// Why no qcow2 overlay of `image` can be written at `output` (empty: one can).
QString qcow2_refusal(const std::string& path, const DiskImage& image, const std::string& output) {
    try {
        check_qcow2_output(path, image, output);
        return {};
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

}  // namespace

QString apply_refusal(const ApplyRequest& request, const std::string& path, const DiskImage& image) {
    if (request.output.empty()) return QObject::tr("Choose the file to write.");
    const QString output = QString::fromStdString(request.output);
    if (QFileInfo::exists(output) && !request.replace_existing)
        return QObject::tr("%1 exists; apply replaces it only when asked to.").arg(output);
    try {
        check_apply_output(request.output, image);
        if (request.format == ApplyOutputFormat::Qcow2) check_qcow2_output(path, image, request.output);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString default_apply_output(const QString& path, ApplyOutputFormat format) {
    const QFileInfo input(path);
    const QString stem = input.completeBaseName().isEmpty() ? input.fileName() : input.completeBaseName();
    const QDir dir = input.absoluteDir();
    QString name = QStringLiteral("%1.defrag.%2").arg(stem, suffix_of(format));
    for (int n = 2; QFileInfo::exists(dir.filePath(name)); ++n)
        name = QStringLiteral("%1.defrag-%2.%3").arg(stem).arg(n).arg(suffix_of(format));
    return dir.filePath(name);
}

ApplyDialog::ApplyDialog(const QString& path, const DiskImage& image, std::size_t moves, QWidget* parent)
    : QDialog(parent),
      path_(path),
      image_(image),
      output_(new QLineEdit(default_apply_output(path, ApplyOutputFormat::Raw))),
      format_(new QComboBox),
      format_note_(new QLabel),
      verify_(new QCheckBox(tr("Verify the result (recommended)"))),
      rate_(new QLineEdit) {
    setWindowTitle(tr("Apply the plan to a copy"));
    output_->setObjectName(QStringLiteral("output"));
    format_->setObjectName(QStringLiteral("format"));
    verify_->setObjectName(QStringLiteral("verify"));
    rate_->setObjectName(QStringLiteral("rate"));
    auto* intro = new QLabel(tr("Carries the plan's %n move(s) out on a new disk and proves the result. "
                                "%1 itself is only read.",
                                nullptr, static_cast<int>(moves))
                                 .arg(QFileInfo(path).fileName()));
    intro->setWordWrap(true);
    format_->addItem(tr("raw (the whole disk, sparse)"));
    format_->addItem(tr("qcow2 overlay (the changed clusters, backed by the input)"));
    format_note_->setWordWrap(true);
    verify_->setChecked(true);
    verify_->setToolTip(
        tr("Hash every stream of both disks and compare the output's allocation, $Bitmap and "
           "$MFTMirr with the plan's prediction; the output is kept only when all of them pass."));
    rate_->setPlaceholderText(tr("no limit (e.g. 50MiB/s)"));
    rate_->setToolTip(tr("Most data copied per second, so that a production datastore is not read flat out"));

    auto* browse = new QPushButton(tr("Browse…"));
    auto* output_row = new QHBoxLayout;
    output_row->addWidget(output_, 1);
    output_row->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Output"), output_row);
    form->addRow(tr("Format"), format_);
    form->addRow(QString(), format_note_);
    form->addRow(QString(), verify_);
    form->addRow(tr("Rate limit"), rate_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Apply"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(buttons);
    setMinimumWidth(620);

    connect(browse, &QPushButton::clicked, this, &ApplyDialog::browse);
    connect(format_, &QComboBox::currentIndexChanged, this, &ApplyDialog::format_changed);
    connect(output_, &QLineEdit::textEdited, this, [this] { output_edited_ = true; });
    connect(output_, &QLineEdit::textChanged, this, &ApplyDialog::output_changed);
    connect(buttons, &QDialogButtonBox::accepted, this, &ApplyDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &ApplyDialog::reject);
    output_changed();
    format_changed();
}

ApplyOutputFormat ApplyDialog::format() const {
    return format_->currentIndex() == kQcow2 ? ApplyOutputFormat::Qcow2 : ApplyOutputFormat::Raw;
}

void ApplyDialog::browse() {
    // The file dialog asks before an existing file is chosen; accept() remembers the answer.
    const QString chosen = QFileDialog::getSaveFileName(this, tr("Output disk"), output_->text(),
                                                        format() == ApplyOutputFormat::Qcow2
                                                            ? tr("qcow2 overlay (*.qcow2);;All files (*)")
                                                            : tr("Raw disk (*.img *.raw);;All files (*)"));
    if (chosen.isEmpty()) return;
    output_edited_ = true;
    output_->setText(chosen);
    request_.replace_existing = QFileInfo::exists(chosen);
}

void ApplyDialog::format_changed() {
    if (!output_edited_) {
        const QSignalBlocker block(output_);
        output_->setText(default_apply_output(path_, format()));
        output_changed();
    }
    format_note_->setText(
        format() == ApplyOutputFormat::Qcow2
            ? tr("For KVM: the overlay needs %1 beside it as it is now; run the guest on it or "
                 "fold it in with qemu-img commit.")
                  .arg(QFileInfo(path_).fileName())
            : tr("A new disk of the input's full virtual size (holes stay unallocated); "
                 "qemu-img convert turns it into VMDK or VHDX."));
}

void ApplyDialog::output_changed() {
    request_.replace_existing = false;
    // An overlay records the input as its backing file: offered only where that works.
    const QString refusal = qcow2_refusal(path_.toStdString(), image_, output_->text().toStdString());
    auto* model = qobject_cast<QStandardItemModel*>(format_->model());
    QStandardItem* qcow2 = model->item(kQcow2);
    qcow2->setEnabled(refusal.isEmpty());
    qcow2->setToolTip(refusal);
    if (!refusal.isEmpty() && format_->currentIndex() == kQcow2) format_->setCurrentIndex(kRaw);
}

void ApplyDialog::accept() {
    const bool replace = request_.replace_existing;  // the file dialog already asked
    request_ = {};
    const QString typed = output_->text().trimmed();
    if (!typed.isEmpty()) request_.output = QFileInfo(typed).absoluteFilePath().toStdString();
    request_.format = format();
    request_.verify = verify_->isChecked();
    const QString rate = rate_->text().trimmed();
    if (!rate.isEmpty()) {
        const auto bytes = parse_rate(rate.toStdString());
        if (!bytes) {
            QMessageBox::warning(this, windowTitle(),
                                 tr("Rate limit: '%1' is not a rate (e.g. 50MiB/s, 200M)").arg(rate));
            return;
        }
        request_.rate = *bytes;
    }
    const QString output = QString::fromStdString(request_.output);
    request_.replace_existing = replace;
    if (!request_.output.empty() && QFileInfo::exists(output) && !replace) {
        const auto answer = QMessageBox::question(
            this, windowTitle(),
            tr("%1 exists.\n\nReplace it? It is replaced only once the new disk is complete%2.")
                .arg(output, request_.verify ? tr(" and verified") : QString()),
            QMessageBox::Yes | QMessageBox::No, QMessageBox::No);
        if (answer != QMessageBox::Yes) return;
        request_.replace_existing = true;
    }
    if (const QString refusal = apply_refusal(request_, path_.toStdString(), image_); !refusal.isEmpty()) {
        QMessageBox::warning(this, windowTitle(), refusal);
        return;
    }
    QDialog::accept();
}

}  // namespace guestfrag::gui
