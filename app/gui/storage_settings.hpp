// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/estimate/device_model.hpp"
#include "core/image/provisioning.hpp"

class QSettings;

namespace guestfrag::gui {

/// The storage a plan's estimate and impact assume (Settings ▸ Storage model, docs/gui.md):
/// what --provisioning, --zero-block, --preset and --device-model set for the CLI's
/// estimate, impact and report (docs/estimate.md §4.1 and §8).
struct StorageSettings {
    std::optional<Provisioning> provisioning;  ///< the top layer's type; unset: as detected
    std::optional<std::uint64_t> zero_block;   ///< every layer's zeroing block; unset: as detected
    std::string preset = "default";            ///< a device_preset name
    std::string device_model;                  ///< a device model JSON file; empty: the preset's models

    bool operator==(const StorageSettings&) const = default;
};

/// The names device_preset takes, the default first.
inline constexpr const char* kPresets[] = {"default", "3par-format"};

/// Whether `bytes` can be a zeroing block: a positive multiple of 512, as --zero-block takes it.
[[nodiscard]] bool valid_zero_block(std::uint64_t bytes) noexcept;

/// The preset's device models with the parameters the device model file gives
/// (read_device_model_file). Throws Error with a one-line reason that starts with the file.
[[nodiscard]] DeviceModels storage_models(const StorageSettings& storage);

/// The storage remembered in `settings` under storage/provisioning ("eager", "lazy", "thin"),
/// storage/zeroBlock (bytes), storage/preset and storage/deviceModel. A key that is missing,
/// or holds what the dialog would not take (edited by hand), leaves its default.
[[nodiscard]] StorageSettings read_storage_settings(const QSettings& settings);

/// Remembers `storage` in `settings` under those keys; a default is stored as no key.
void write_storage_settings(QSettings& settings, const StorageSettings& storage);

}  // namespace guestfrag::gui
