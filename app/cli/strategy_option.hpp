// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <CLI/CLI.hpp>

namespace guestfrag::cli {

/// Accepts the name of a strategy (kStrategies) and nothing else (a usage error, exit 1).
[[nodiscard]] CLI::Validator strategy_check();

}  // namespace guestfrag::cli
