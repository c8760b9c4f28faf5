// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/apply_dialog.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QStandardItemModel>

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
    if (QString why = output_refusal(request.output, image, request.replace_existing,
                                     QObject::tr("%1 exists; apply replaces it only when asked to."));
        !why.isEmpty())
        return why;
    if (request.format == ApplyOutputFormat::Qcow2) return qcow2_refusal(path, image, request.output);
    return {};
}

QString default_apply_output(const QString& path, ApplyOutputFormat format) {
    return default_output(path, QStringLiteral("defrag"), suffix_of(format));
}

ApplyDialog::ApplyDialog(const QString& path, const DiskImage& image, std::size_t moves, QWidget* parent)
    : NewDiskDialog(path, image, tr("Apply the plan to a copy"),
                    tr("Carries the plan's %n move(s) out on a new disk and proves the result. "
                       "%1 itself is only read.",
                       nullptr, static_cast<int>(moves))
                        .arg(image_file_name(path)),
                    tr("Apply"), parent) {
    format_->addItem(tr("raw (the whole disk, sparse)"));
    format_->addItem(tr("qcow2 overlay (the changed clusters, backed by the input)"));
    verify_->setToolTip(
        tr("Hash every stream of both disks and compare the output's allocation, $Bitmap and "
           "$MFTMirr with the plan's prediction; the output is kept only when all of them pass."));

    connect(format_, &QComboBox::currentIndexChanged, this, &ApplyDialog::format_changed);
    connect(output_, &QLineEdit::textChanged, this, &ApplyDialog::output_changed);
    format_changed();
    output_changed();
}

ApplyOutputFormat ApplyDialog::format() const {
    return format_->currentIndex() == kQcow2 ? ApplyOutputFormat::Qcow2 : ApplyOutputFormat::Raw;
}

void ApplyDialog::browse() {
    // The file dialog asks before an existing file is chosen; accept() remembers the answer.
    const QString chosen =
        choose_output(format() == ApplyOutputFormat::Qcow2 ? tr("qcow2 overlay (*.qcow2);;All files (*)")
                                                           : tr("Raw disk (*.img *.raw);;All files (*)"),
                      true);
    if (!chosen.isEmpty()) request_.replace_existing = QFileInfo::exists(chosen);
}

void ApplyDialog::format_changed() {
    suggest_output(default_apply_output(path_, format()));
    set_format_note(format() == ApplyOutputFormat::Qcow2
                        ? tr("For KVM: the overlay needs %1 beside it as it is now; run the guest on it or "
                             "fold it in with qemu-img commit.")
                              .arg(image_file_name(path_))
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
    request_.output = output_path();
    request_.format = format();
    request_.verify = verify_->isChecked();
    const std::optional<std::uint64_t> rate = read_rate();
    if (!rate) return;
    request_.rate = *rate;
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
    if (const QString refusal = apply_refusal(request_, path_.toStdString(), image_); !refusal.isEmpty())
        return refuse(refusal);
    QDialog::accept();
}

}  // namespace guestfrag::gui
