// SPDX-License-Identifier: GPL-2.0-or-later
// The device models as JSON: what `estimate --json` prints under "device_models", and what
// `--device-model FILE` reads back, any subset of it (docs/estimate.md, "Your own device").
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "core/estimate/device_model.hpp"

namespace guestfrag {

/// {"hdd": {...}, "ssd": {...}, "array": {...}}: every parameter, in the models' order.
[[nodiscard]] nlohmann::ordered_json device_models_json(const DeviceModels& models);

/// `base` with the parameters `doc` gives replaced; `doc` has the shape device_models_json
/// prints, any subset of its keys. Throws Error(Unsupported) naming the key
/// ("array.first_write.allocate_seconds: …") for a key it does not have, a value of the
/// wrong type or one out of its range.
[[nodiscard]] DeviceModels read_device_models(const nlohmann::json& doc, DeviceModels base);

/// How long read_device_model_file waits for a pipe or FIFO that gives no data.
inline constexpr std::chrono::milliseconds kDeviceModelPipeTimeout{30'000};

/// read_device_models of the JSON file at `path` (a regular file, or a pipe such as `<(…)`
/// read as JsonInput does). Throws Error with the reason, without the path: as JsonInput
/// does when the file cannot be read, Error(Unsupported) when it is not JSON or not a model.
[[nodiscard]] DeviceModels read_device_model_file(const std::string& path, DeviceModels base);

}  // namespace guestfrag
