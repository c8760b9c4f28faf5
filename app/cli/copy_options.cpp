// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/copy_options.hpp"

#include "app/cli/size_option.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

void add_copy_options(CLI::App& cmd, CopyOptionTexts& texts) {
    std::string presets;
    for (const OffloadPreset& p : kOffloadPresets)
        presets += (presets.empty() ? "" : ", ") + std::string(p.name);
    cmd.add_option("--transfer-size", texts.transfer_sizes,
                   "Array-offload transfer sizes of the copy figures, comma-separated (at most 16M)")
        ->delimiter(',')
        ->check(size_check())
        ->capture_default_str();
    cmd.add_flag("--vmfs5-thin", texts.vmfs5_thin,
                 "Cap offload commands at 1 MiB, as VMFS5 did for thin disks");
    cmd.add_option("--copy-preset", texts.preset, "Offload costs of the copy times: " + presets)
        ->check(CLI::Validator(
            [](const std::string& name) {
                return find_offload_preset(name) ? std::string() : "'" + name + "' is not a copy preset";
            },
            "NAME"))
        ->capture_default_str();
    cmd.add_option("--offload-command-ms", texts.command_ms,
                   "Milliseconds each offload command costs (replaces the preset's)")
        ->check(CLI::NonNegativeNumber);
    cmd.add_option("--offload-rate", texts.byte_rate,
                   "Bytes per second an offloaded copy moves besides its commands, e.g. 7GB/s (replaces the "
                   "preset's)")
        ->check(rate_check());
}

CopyOptions copy_options(const CopyOptionTexts& texts) {
    CopyOptions copy;
    copy.transfer_sizes.clear();
    for (const std::string& t : texts.transfer_sizes) copy.transfer_sizes.push_back(*parse_size(t));
    copy.vmfs5_thin = texts.vmfs5_thin;
    if (const OffloadPreset* p = find_offload_preset(texts.preset)) copy.preset = *p;
    if (texts.command_ms) {
        copy.preset.name = "custom";
        copy.preset.command_seconds = *texts.command_ms / 1000.0;
    }
    if (!texts.byte_rate.empty()) {
        copy.preset.name = "custom";
        copy.preset.byte_seconds = 1.0 / static_cast<double>(rate_option(texts.byte_rate));
    }
    return copy;
}

}  // namespace guestfrag::cli
