// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <ostream>

#include "core/impact/impact.hpp"

namespace guestfrag::cli {

/// The impact figures and warnings for people: storage growth, snapshot deltas,
/// deduplication, VSS, alignment, linked clone, then the warnings most severe first.
void print_impact(std::ostream& out, const Impact& impact);

/// One line per warning ("  warning  THIN_GROWTH   28.7 MiB  message"), or "  none".
void print_warnings(std::ostream& out, const std::vector<ImpactWarning>& warnings);

}  // namespace guestfrag::cli
