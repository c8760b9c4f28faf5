// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/plan/planner.hpp"

namespace guestfrag::cli {

/// Accepts the name of a strategy (kStrategies) and nothing else (a usage error, exit 1).
[[nodiscard]] CLI::Validator strategy_check();

/// Accepts what parse_order accepts: size, mft, path, trace:SOURCE (a usage error otherwise).
[[nodiscard]] CLI::Validator order_check();
/// The order `text` (checked by order_check()) gives `strategy`: nullopt when not given ("",
/// the strategy's default). A strategy that takes no order is a usage error (exit 1)
/// naming both.
[[nodiscard]] std::optional<PlacementOrder> order_option(const std::string& text, Strategy strategy);

/// Help text of --order.
inline constexpr const char* kOrderHelp =
    "Order to lay streams out in (defrag, consolidate, optimize): size, mft, path or trace:SOURCE "
    "(SOURCE as for --workload trace:); default: mft";

}  // namespace guestfrag::cli
