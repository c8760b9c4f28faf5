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
    "Order to lay streams out in (defrag, consolidate, optimize; see Orders below); default: the "
    "strategy's";

/// Help footers: one line of meaning per strategy, order and workload (docs/planner.md §5-8,
/// §12, §14; docs/estimate.md).
inline constexpr const char* kStrategyMeanings =
    "Strategies:\n"
    "  defrag          each fragmented file into one free region, most fragmented first\n"
    "  consolidate     files from the volume's end into the free holes before them, so free "
    "space ends as few large extents (the cheap optimize)\n"
    "  optimize        every file laid out end to end in --order, free space one window: the "
    "most moves, the fastest whole-volume reads\n"
    "  thin-safe       defrag into clusters the top layer already holds: a thin disk or a "
    "linked clone does not grow\n"
    "  shrink          data packed into the fewest host granules, so compact or TRIM gives "
    "the most back\n";
inline constexpr const char* kOrderMeanings =
    "Orders (defrag, consolidate, optimize):\n"
    "  size            largest first, best fit (optimize's default)\n"
    "  mft             MFT record order, as scan reads (defrag's and consolidate's default)\n"
    "  path            depth-first path order, as scan:path reads\n"
    "  trace:SOURCE    the files a trace names first, in its order, then by path\n";
inline constexpr const char* kWorkloadMeanings =
    "Workloads:\n"
    "  scan            every file read whole once, in MFT order (antivirus, backup agent)\n"
    "  scan:path       the same in path order (a tree walk, robocopy)\n"
    "  trace:SOURCE    a path list, .pf, Layout.ini, @prefetch or @layout (boot and "
    "application start, read from the image), or a block IO trace (nbdkit log, blkparse, "
    "vscsiStats)\n"
    "  write:N         N new files written\n"
    "  fio:OPTIONS     a fio job: rw=, bs=, size=, offset=, rwmixread=, number_ios=, "
    "randseed=, target=disk|file\n"
    "  install:N       N files appended in chunks by concurrent writers (,writers=W,chunk=SIZE)\n";

}  // namespace guestfrag::cli
