// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <ostream>

#include "analyzers/copy_cost.hpp"
#include "core/impact/impact.hpp"

namespace guestfrag::cli {

/// The impact figures and warnings for people: storage growth, snapshot deltas,
/// deduplication, VSS, alignment, linked clone, the image file's layout, the plan's own IO
/// on eager, lazy and thin storage, what a full copy
/// costs in the three states (`copy`) with its advice, then the warnings most severe first.
void print_impact(std::ostream& out, const Impact& impact, const CopyStates& copy);

/// The plan's own IO (docs/impact.md §10): IOs, bytes read and written, the provisioning,
/// destination bytes into written and into new zeroing blocks, then eager, lazy and thin.
void print_plan_writes(std::ostream& out, const PlanWrites& writes);

/// The copy states side by side, one row per transfer size, then the advice.
void print_copy_states(std::ostream& out, const CopyStates& copy);

/// One line per warning ("  warning  THIN_GROWTH   28.7 MiB  message"), or "  none".
void print_warnings(std::ostream& out, const std::vector<ImpactWarning>& warnings);

}  // namespace guestfrag::cli
