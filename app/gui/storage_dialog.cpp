// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/storage_dialog.hpp"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/error.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::gui {

namespace {

QString qstr(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

/// `bytes` as parse_size reads it back exactly: "64KiB", "1MiB", "1536".
QString size_field(std::uint64_t bytes) {
    if (bytes % (1 << 20) == 0) return QString::number(bytes >> 20) + QStringLiteral("MiB");
    if (bytes % (1 << 10) == 0) return QString::number(bytes >> 10) + QStringLiteral("KiB");
    return QString::number(bytes);
}

}  // namespace

StorageDialog::StorageDialog(const StorageSettings& storage, const std::optional<LayerProvisioning>& detected,
                             QWidget* parent)
    : QDialog(parent),
      provisioning_(new QComboBox),
      zero_block_(new QLineEdit),
      preset_(new QComboBox),
      device_model_(new QLineEdit),
      error_(new QLabel),
      settings_(storage) {
    setWindowTitle(tr("Storage model"));
    provisioning_->setObjectName(QStringLiteral("provisioning"));
    zero_block_->setObjectName(QStringLiteral("zeroBlock"));
    preset_->setObjectName(QStringLiteral("preset"));
    device_model_->setObjectName(QStringLiteral("deviceModel"));
    error_->setObjectName(QStringLiteral("error"));

    auto* heading = new QLabel(
        tr("The storage under the image that the plan's estimate and impact assume, as --provisioning, "
           "--zero-block, --preset and --device-model set it for guestfrag estimate. Accepting plans the "
           "volume again."));
    heading->setWordWrap(true);

    const QString as_detected = detected ? tr("as detected (%1%2)")
                                               .arg(qstr(provisioning_name(detected->type)),
                                                    detected->assumed ? tr(", assumed") : QString())
                                         : tr("as detected");
    provisioning_->addItem(as_detected);
    provisioning_->addItem(tr("eager (eager-zeroed thick)"), QStringLiteral("eager"));
    provisioning_->addItem(tr("lazy (lazy-zeroed thick)"), QStringLiteral("lazy"));
    provisioning_->addItem(tr("thin"), QStringLiteral("thin"));
    if (storage.provisioning)
        provisioning_->setCurrentIndex(
            provisioning_->findData(qstr(provisioning_name(*storage.provisioning))));
    provisioning_->setToolTip(
        tr("What a first write to a zeroing block costs: nothing on eager, zeroing the block on lazy, "
           "allocating and zeroing it on thin"));

    zero_block_->setPlaceholderText(
        detected ? tr("as detected (%1)").arg(qstr(format_size(detected->zero_block))) : tr("as detected"));
    if (storage.zero_block) zero_block_->setText(size_field(*storage.zero_block));
    zero_block_->setToolTip(
        tr("The block the storage allocates and zeroes on a first write (e.g. 1MiB, the VMFS file block); "
           "empty: the one the format records"));

    for (const char* preset : kPresets) preset_->addItem(QString::fromLatin1(preset));
    preset_->setCurrentText(QString::fromStdString(storage.preset));
    preset_->setToolTip(
        tr("default, or 3par-format: the array calibrated from a published full format of a 40 GiB disk on "
           "eager, lazy and thin"));

    device_model_->setText(QString::fromStdString(storage.device_model));
    device_model_->setPlaceholderText(tr("none: the preset's parameters"));
    device_model_->setClearButtonEnabled(true);
    device_model_->setToolTip(
        tr("JSON file of device parameters replacing the preset's: any subset of what `guestfrag estimate "
           "--json` prints under device_models"));
    auto* browse_button = new QPushButton(tr("Browse…"));
    auto* model_row = new QHBoxLayout;
    model_row->addWidget(device_model_, 1);
    model_row->addWidget(browse_button);

    QPalette alarm = error_->palette();
    alarm.setColor(QPalette::WindowText, QColor(0xb0, 0x00, 0x20));
    error_->setPalette(alarm);
    error_->setWordWrap(true);  // one line of text; a long path wraps rather than widen the dialog
    error_->setVisible(false);

    auto* form = new QFormLayout;
    form->addRow(tr("Provisioning"), provisioning_);
    form->addRow(tr("Zeroing block"), zero_block_);
    form->addRow(tr("Device preset"), preset_);
    form->addRow(tr("Device model"), model_row);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(heading);
    layout->addLayout(form);
    layout->addWidget(error_);
    layout->addWidget(buttons);
    setMinimumWidth(560);

    connect(browse_button, &QPushButton::clicked, this, &StorageDialog::browse);
    connect(buttons, &QDialogButtonBox::accepted, this, &StorageDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &StorageDialog::reject);
}

void StorageDialog::browse() {
    const QString chosen = QFileDialog::getOpenFileName(this, tr("Device model"), device_model_->text(),
                                                        tr("JSON (*.json);;All files (*)"));
    if (!chosen.isEmpty()) device_model_->setText(chosen);
}

void StorageDialog::refuse(const QString& why) {
    error_->setText(why);
    error_->setVisible(true);
}

void StorageDialog::showEvent(QShowEvent* event) {
    QDialog::showEvent(event);
    // The first size is for the heading's widest wrapping: as tall as the rows at the width.
    resize(width(), heightForWidth(width()));
}

void StorageDialog::accept() {
    StorageSettings storage;
    storage.provisioning = provisioning_from_name(provisioning_->currentData().toString().toStdString());
    if (const QString text = zero_block_->text().trimmed(); !text.isEmpty()) {
        storage.zero_block = parse_size(text.toStdString());
        if (!storage.zero_block || !valid_zero_block(*storage.zero_block))
            return refuse(tr("Zeroing block: '%1' is not a positive multiple of 512 bytes (e.g. 64KiB, 1MiB)")
                              .arg(text));
    }
    storage.preset = preset_->currentText().toStdString();
    // Absolute: a remembered file is found again from wherever the window is started.
    if (const QString file = device_model_->text().trimmed(); !file.isEmpty())
        storage.device_model = QFileInfo(file).absoluteFilePath().toStdString();
    try {
        models_ = storage_models(storage);
    } catch (const Error& e) {
        return refuse(QString::fromStdString(e.what()));
    }
    settings_ = std::move(storage);
    QDialog::accept();
}

}  // namespace guestfrag::gui
