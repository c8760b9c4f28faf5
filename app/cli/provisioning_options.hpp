// SPDX-License-Identifier: GPL-2.0-or-later
// --provisioning, --zero-block, --preset and --device-model: the storage options of analyze,
// estimate, impact and report, read in one place.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/estimate/device_model.hpp"
#include "core/image/layer_provisioning.hpp"

namespace guestfrag::cli {

/// The texts of --provisioning (repeatable) and --zero-block as given.
struct ProvisioningOptions {
    std::vector<std::string> types;
    std::string zero_block;
};

/// Adds --provisioning [DEPTH=]thin|lazy|eager and --zero-block SIZE to `cmd`, storing into
/// `options` (which must outlive the parse). Malformed values are usage errors (exit 1).
void add_provisioning_options(CLI::App& cmd, ProvisioningOptions& options);

/// The texts of --preset and --device-model as given.
struct DeviceOptions {
    std::string preset = "default";
    std::string model_file;  ///< empty: none
};

/// Adds --preset default|3par-format (device_preset's names) and --device-model FILE to
/// `cmd`, storing into `options` (which must outlive the parse); another preset name is a
/// usage error (exit 1).
void add_device_options(CLI::App& cmd, DeviceOptions& options);

/// The preset's models with the parameters the --device-model file gives. A file that cannot
/// be read, is not JSON or has a key, type or value the models do not take is a usage error
/// (Failure, exit 1) naming the file and the key.
[[nodiscard]] DeviceModels device_models(const DeviceOptions& options);

/// Each layer's provisioning as `options` leave it (effective_provisioning); throws
/// Error(Unsupported) for a depth the chain does not have.
[[nodiscard]] std::vector<LayerProvisioning> layer_provisioning(std::span<const Layer> layers,
                                                                const ProvisioningOptions& options);

/// "thin, zeroing block 1 MiB: BASIS" or "eager (assumed), zeroing block 2 MiB: BASIS".
[[nodiscard]] std::string provisioning_text(const LayerProvisioning& p);

}  // namespace guestfrag::cli
