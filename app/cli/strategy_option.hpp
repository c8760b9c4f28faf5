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
/// Its description lists them as kOrderForms, which help and completion show.
[[nodiscard]] CLI::Validator order_check();
inline constexpr const char* kOrderForms = "size|mft|path|trace:SOURCE";

/// Accepts what parse_workload accepts (a usage error otherwise), described as kWorkloadForms.
[[nodiscard]] CLI::Validator workload_check();
inline constexpr const char* kWorkloadForms =
    "scan|scan:mft|scan:path|trace:@prefetch|trace:@layout|trace:SOURCE|write:N|fio:OPTIONS|install:N";
/// The order `text` (checked by order_check()) gives `strategy`: nullopt when not given ("",
/// the strategy's default). A strategy that takes no order is a usage error (exit 1)
/// naming both.
[[nodiscard]] std::optional<PlacementOrder> order_option(const std::string& text, Strategy strategy);

/// Help text of --order.
inline constexpr const char* kOrderHelp =
    "Order to lay streams out in (defrag, consolidate, optimize): size, mft, path or trace:SOURCE "
    "(SOURCE as for --workload trace:); default: mft";

}  // namespace guestfrag::cli
