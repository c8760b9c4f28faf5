// SPDX-License-Identifier: GPL-2.0-or-later
// The window's Settings ▸ Storage model: the storage plans are estimated and assessed on,
// remembered with QSettings by an interactive window (docs/gui.md).
#include <memory>
#include <utility>

#include <QLabel>
#include <QSettings>

#include "app/gui/main_window.hpp"
#include "app/gui/storage_dialog.hpp"
#include "core/error.hpp"

namespace guestfrag::gui {

void MainWindow::load_storage() {
    storage_ = read_storage_settings(QSettings());
    try {
        models_ = storage_models(storage_);
    } catch (const Error& e) {
        // A file moved or deleted since: the preset's models for this run, and the user is
        // told; the dialog no longer shows the file, so accepting it forgets the file.
        status_->setText(tr("Storage model: %1; the preset's parameters are used instead.")
                             .arg(QString::fromStdString(e.what())));
        storage_.device_model.clear();
        models_ = storage_models(storage_);
    }
}

std::unique_ptr<StorageDialog> MainWindow::storage_dialog() {
    std::optional<LayerProvisioning> detected;
    if (opened_.image) detected = opened_.image->layers().front().provisioning;
    return std::make_unique<StorageDialog>(storage_, detected, this);
}

void MainWindow::choose_storage() {
    const auto dialog = storage_dialog();
    if (dialog->exec() != QDialog::Accepted) return;
    use_storage(dialog->settings(), dialog->models());
    if (interactive_) {
        QSettings settings;
        write_storage_settings(settings, storage_);
    }
}

bool MainWindow::set_device_model(const std::string& path, QString* error) {
    StorageSettings storage = storage_;
    storage.device_model = path;
    try {
        const DeviceModels models = storage_models(storage);
        use_storage(std::move(storage), models);
        return true;
    } catch (const Error& e) {
        if (error) *error = QString::fromStdString(e.what());
        return false;
    }
}

void MainWindow::use_storage(StorageSettings storage, const DeviceModels& models) {
    storage_ = std::move(storage);
    models_ = models;
    run_plan();  // nothing before an image is analysed; then it plans with these
}

}  // namespace guestfrag::gui
