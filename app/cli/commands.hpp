// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <CLI/CLI.hpp>

namespace guestfrag::cli {

// Each function registers one subcommand whose callback does the work and throws Failure
// on error. Output goes to stdout; diagnostics and progress to stderr.
void add_analyze_command(CLI::App& app);
void add_mkimage_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_estimate_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_impact_command(CLI::App& app);
void add_batch_command(CLI::App& app);
void add_history_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_fleet_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_apply_command(CLI::App& app);
void add_compact_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);

/// Every subcommand above, in the order help lists them, and `completion` (completion.hpp):
/// the one definition the program, its help, man page and completion come from.
void add_commands(CLI::App& app);

}  // namespace guestfrag::cli
