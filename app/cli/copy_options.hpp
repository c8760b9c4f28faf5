// SPDX-License-Identifier: GPL-2.0-or-later
// The options of the copy model (docs/copy.md), shared by analyze, impact and report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analyzers/copy_cost.hpp"

namespace guestfrag::cli {

/// The texts of the copy options as given.
struct CopyOptionTexts {
    std::vector<std::string> transfer_sizes = {"1M", "4M", "8M", "16M"};
    bool vmfs5_thin = false;
    std::string preset = kOffloadPresets[0].name;
    std::optional<double> command_ms;  ///< --offload-command-ms: replaces the preset's
    std::string byte_rate;             ///< --offload-rate: replaces the preset's
};

/// Adds --transfer-size, --vmfs5-thin, --copy-preset, --offload-command-ms and
/// --offload-rate to `cmd`, storing into `texts` (which must outlive the parse). Malformed
/// values are usage errors (exit 1).
void add_copy_options(CLI::App& cmd, CopyOptionTexts& texts);

/// The CopyOptions the checked texts say: the preset, with either cost replaced when given.
[[nodiscard]] CopyOptions copy_options(const CopyOptionTexts& texts);

}  // namespace guestfrag::cli
