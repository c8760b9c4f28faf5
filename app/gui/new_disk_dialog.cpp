// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/new_disk_dialog.hpp"

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
#include <QVBoxLayout>

#include "core/error.hpp"
#include "core/image/nbd_uri.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::gui {

QString output_refusal(const std::string& output, const DiskImage& image, bool replace,
                       const QString& exists) {
    if (output.empty()) return QObject::tr("Choose the file to write.");
    // The core's checks first, as if replacing were allowed: the input itself, one of its
    // layers or a directory is an existing file too, and the more precise reason is the one to show.
    try {
        check_apply_output(output, image, true);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    const QString file = QString::fromStdString(output);
    if (!replace && QFileInfo::exists(file)) return exists.arg(file);
    return {};
}

QString image_file_name(const QString& path) {
    return QString::fromStdString(location_file_name(path.toStdString()));
}

QString default_output(const QString& path, const QString& tag, const QString& suffix) {
    // An image on an NBD server is written beside us, under its export's name.
    const bool remote = is_nbd_uri(path.toStdString());
    const QFileInfo input(remote ? image_file_name(path) : path);
    const QString stem = input.completeBaseName().isEmpty() ? input.fileName() : input.completeBaseName();
    const QDir dir = remote ? QDir::current() : input.absoluteDir();
    QString name = QStringLiteral("%1.%2.%3").arg(stem, tag, suffix);
    for (int n = 2; QFileInfo::exists(dir.filePath(name)); ++n)
        name = QStringLiteral("%1.%2-%3.%4").arg(stem, tag).arg(n).arg(suffix);
    return dir.filePath(name);
}

void NewDiskDialog::showEvent(QShowEvent* event) {
    QDialog::showEvent(event);
    fit_height();
}

void NewDiskDialog::set_format_note(const QString& note) {
    format_note_->setText(note);
    if (isVisible()) fit_height();
}

void NewDiskDialog::fit_height() {
    // QFormLayout sizes a wrapping row for a narrower column than it then gives it, and the
    // dialog's first size for its widest text: both left a band of empty space. The note is
    // as tall as its lines at the width it has, the dialog as tall as its rows.
    format_note_->setFixedHeight(format_note_->heightForWidth(format_note_->width()));
    layout()->activate();
    resize(width(), heightForWidth(width()));
}

NewDiskDialog::NewDiskDialog(const QString& path, const DiskImage& image, const QString& title,
                             const QString& intro, const QString& ok, QWidget* parent)
    : QDialog(parent),
      path_(path),
      image_(image),
      output_(new QLineEdit),
      format_(new QComboBox),
      verify_(new QCheckBox(tr("Verify the result (recommended)"))),
      rate_(new QLineEdit),
      format_note_(new QLabel),
      form_(new QFormLayout) {
    setWindowTitle(title);
    output_->setObjectName(QStringLiteral("output"));
    format_->setObjectName(QStringLiteral("format"));
    verify_->setObjectName(QStringLiteral("verify"));
    rate_->setObjectName(QStringLiteral("rate"));
    auto* heading = new QLabel(intro);
    heading->setWordWrap(true);
    format_note_->setWordWrap(true);
    verify_->setChecked(true);
    rate_->setPlaceholderText(tr("no limit (e.g. 50MiB/s)"));
    rate_->setToolTip(tr("Most data copied per second, so that a production datastore is not read flat out"));

    auto* browse_button = new QPushButton(tr("Browse…"));
    auto* output_row = new QHBoxLayout;
    output_row->addWidget(output_, 1);
    output_row->addWidget(browse_button);
    form_->addRow(tr("Output"), output_row);
    form_->addRow(tr("Format"), format_);
    form_->addRow(QString(), format_note_);
    verify_row_ = form_->rowCount();
    form_->addRow(QString(), verify_);
    form_->addRow(tr("Rate limit"), rate_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(ok);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(heading);
    layout->addLayout(form_);
    layout->addWidget(buttons);
    setMinimumWidth(620);

    // browse() is virtual: connected here, it is only called once the subclass exists.
    connect(browse_button, &QPushButton::clicked, this, [this] { browse(); });
    connect(output_, &QLineEdit::textEdited, this, [this] { output_edited_ = true; });
    connect(buttons, &QDialogButtonBox::accepted, this, &NewDiskDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &NewDiskDialog::reject);
}

void NewDiskDialog::add_row(const QString& label, QWidget* field) {
    form_->insertRow(verify_row_++, label, field);
}

void NewDiskDialog::suggest_output(const QString& suggested) {
    if (!output_edited_) output_->setText(suggested);
}

QString NewDiskDialog::choose_output(const QString& filter, bool confirm_overwrite) {
    const QString chosen = QFileDialog::getSaveFileName(
        this, tr("Output disk"), output_->text(), filter, nullptr,
        confirm_overwrite ? QFileDialog::Options{} : QFileDialog::DontConfirmOverwrite);
    if (chosen.isEmpty()) return {};
    output_edited_ = true;
    output_->setText(chosen);
    return chosen;
}

std::string NewDiskDialog::output_path() const {
    const QString typed = output_->text().trimmed();
    return typed.isEmpty() ? std::string() : QFileInfo(typed).absoluteFilePath().toStdString();
}

std::optional<std::uint64_t> NewDiskDialog::read_rate() {
    const QString rate = rate_->text().trimmed();
    if (rate.isEmpty()) return 0;
    const auto bytes = parse_rate(rate.toStdString());
    if (!bytes) refuse(tr("Rate limit: '%1' is not a rate (e.g. 50MiB/s, 200M)").arg(rate));
    return bytes;
}

void NewDiskDialog::refuse(const QString& why) { QMessageBox::warning(this, windowTitle(), why); }

}  // namespace guestfrag::gui
