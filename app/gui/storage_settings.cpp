// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/storage_settings.hpp"

#include <QSettings>

#include "core/error.hpp"
#include "core/estimate/device_model_json.hpp"
#include "core/estimate/io.hpp"

namespace guestfrag::gui {

namespace {

const QString kProvisioningKey = QStringLiteral("storage/provisioning");
const QString kZeroBlockKey = QStringLiteral("storage/zeroBlock");
const QString kPresetKey = QStringLiteral("storage/preset");
const QString kDeviceModelKey = QStringLiteral("storage/deviceModel");

/// Sets `key` to `value`, or removes it when `value` is the default: the file then shows
/// only what the user changed.
void store(QSettings& settings, const QString& key, const QVariant& value, bool is_default) {
    if (is_default)
        settings.remove(key);
    else
        settings.setValue(key, value);
}

}  // namespace

bool valid_zero_block(std::uint64_t bytes) noexcept { return bytes != 0 && bytes % kSectorBytes == 0; }

DeviceModels storage_models(const StorageSettings& storage) {
    const std::optional<DeviceModels> preset = device_preset(storage.preset);
    if (!preset) throw Error(ErrorKind::Unsupported, "'" + storage.preset + "' is not a device preset");
    if (storage.device_model.empty()) return *preset;
    try {
        return read_device_model_file(storage.device_model, *preset);
    } catch (const Error& e) {
        throw Error(e.kind(), storage.device_model + ": " + e.what());
    }
}

StorageSettings read_storage_settings(const QSettings& settings) {
    StorageSettings out;
    out.provisioning = provisioning_from_name(settings.value(kProvisioningKey).toString().toStdString());
    bool number = false;
    const std::uint64_t zero_block = settings.value(kZeroBlockKey).toULongLong(&number);
    if (number && valid_zero_block(zero_block)) out.zero_block = zero_block;
    const std::string preset = settings.value(kPresetKey).toString().toStdString();
    if (device_preset(preset)) out.preset = preset;
    out.device_model = settings.value(kDeviceModelKey).toString().toStdString();
    return out;
}

void write_storage_settings(QSettings& settings, const StorageSettings& storage) {
    const std::string_view type = storage.provisioning ? provisioning_name(*storage.provisioning) : "";
    store(settings, kProvisioningKey, QString::fromUtf8(type.data(), static_cast<qsizetype>(type.size())),
          !storage.provisioning);
    store(settings, kZeroBlockKey, QVariant::fromValue(storage.zero_block.value_or(0)), !storage.zero_block);
    store(settings, kPresetKey, QString::fromStdString(storage.preset),
          storage.preset == StorageSettings{}.preset);
    store(settings, kDeviceModelKey, QString::fromStdString(storage.device_model),
          storage.device_model.empty());
}

}  // namespace guestfrag::gui
