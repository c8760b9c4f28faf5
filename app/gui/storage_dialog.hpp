// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>

#include <QDialog>

#include "app/gui/storage_settings.hpp"

class QComboBox;
class QLabel;
class QLineEdit;

namespace guestfrag::gui {

/// Settings ▸ Storage model: the provisioning (as detected, eager, lazy, thin), the zeroing
/// block (as detected or a size), the device preset and a device model file of the storage
/// under the image. Accepting reads the file; one it cannot take keeps the dialog open with
/// the reason on one line. The fields' object names ("provisioning", "zeroBlock", "preset",
/// "deviceModel", "error") let tests find them.
class StorageDialog : public QDialog {
    Q_OBJECT
public:
    /// Shows `storage`; `detected` is the open image's top layer as detected (nullopt: no
    /// image), named in the "as detected" choices.
    StorageDialog(const StorageSettings& storage, const std::optional<LayerProvisioning>& detected,
                  QWidget* parent = nullptr);

    /// What the fields describe, and its device models (valid after the dialog was accepted).
    [[nodiscard]] const StorageSettings& settings() const { return settings_; }
    [[nodiscard]] const DeviceModels& models() const { return models_; }

    void accept() override;

protected:
    void showEvent(QShowEvent* event) override;

private:
    void browse();
    void refuse(const QString& why);

    QComboBox* provisioning_;
    QLineEdit* zero_block_;
    QComboBox* preset_;
    QLineEdit* device_model_;
    QLabel* error_;
    StorageSettings settings_;
    DeviceModels models_;
};

}  // namespace guestfrag::gui
