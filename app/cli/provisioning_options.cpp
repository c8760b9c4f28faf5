// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/provisioning_options.hpp"

#include "app/cli/failure.hpp"
#include "app/cli/size_option.hpp"
#include "core/error.hpp"
#include "core/estimate/device_model_json.hpp"
#include "core/estimate/device_model.hpp"
#include "core/estimate/io.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

void add_provisioning_options(CLI::App& cmd, ProvisioningOptions& options) {
    cmd.add_option("--provisioning", options.types,
                   "The storage's provisioning instead of the detected one: thin, lazy (lazy-zeroed thick) or "
                   "eager (eager-zeroed thick), for the image (the layer writes go to) or DEPTH=TYPE for layer "
                   "DEPTH (0 = the image, 1 = its parent, ...)")
        ->check(CLI::Validator(
            [](const std::string& text) {
                return parse_provisioning_override(text)
                           ? std::string()
                           : "'" + text + "' is not thin, lazy, eager or DEPTH=thin|lazy|eager";
            },
            "[DEPTH=]thin|lazy|eager"));
    cmd.add_option("--zero-block", options.zero_block,
                   "The block the storage allocates and zeroes on a first write, for every layer, instead of "
                   "the one the format records (a positive multiple of 512 bytes)")
        ->check(CLI::Validator(
            [](const std::string& text) {
                const auto size = parse_size(text);
                if (!size) return "'" + text + "' is not a size (e.g. 64K, 1MiB)";
                if (*size == 0 || *size % kSectorBytes != 0)
                    return "'" + text + "' is not a positive multiple of 512 bytes";
                return std::string();
            },
            "SIZE"));
}

void add_device_options(CLI::App& cmd, DeviceOptions& options) {
    cmd.add_option("--preset", options.preset,
                   "Device parameters: default, or 3par-format (the array calibrated from a published full "
                   "format of a 40 GiB disk on eager, lazy and thin)")
        ->check(CLI::Validator(
            [](const std::string& text) {
                return device_preset(text) ? std::string() : "'" + text + "' is not default or 3par-format";
            },
            "default|3par-format"))
        ->capture_default_str();
    cmd.add_option("--device-model", options.model_file,
                   "JSON file of device parameters replacing the preset's: any subset of what estimate --json "
                   "prints under device_models");
}

DeviceModels device_models(const DeviceOptions& options) {
    DeviceModels models = *device_preset(options.preset);  // the validator accepted the name
    if (options.model_file.empty()) return models;
    try {
        return read_device_model_file(options.model_file, models);
    } catch (const Error& e) {
        throw Failure(options.model_file, e.what(), kUsage);
    }
}

std::vector<LayerProvisioning> layer_provisioning(std::span<const Layer> layers, const ProvisioningOptions& options) {
    // The validators above accepted these texts.
    std::vector<ProvisioningOverride> overrides;
    for (const std::string& text : options.types) overrides.push_back(*parse_provisioning_override(text));
    return effective_provisioning(layers, overrides, size_option(options.zero_block));
}

std::string provisioning_text(const LayerProvisioning& p) {
    return std::string(provisioning_name(p.type)) + (p.assumed ? " (assumed)" : "") + ", zeroing block " +
           format_size(p.zero_block) + ": " + p.basis;
}

}  // namespace guestfrag::cli
