// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <ostream>
#include <string>

#include "core/model/volume_map.hpp"
#include "core/plan/frontier.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag::cli {

/// A plan's summary for people: moves, data moved, before -> after figures, growth, the
/// reasons streams were skipped (grouped) and the planner's notes.
void print_plan_summary(std::ostream& out, const Plan& plan, const VolumeMap& volume, const std::string& image);

/// The trade-off table of `plan --frontier`: one row per budget, the knee marked, then the
/// knee in words ("moving 30 % of the data gives 80 % of the improvement").
void print_frontier(std::ostream& out, const Frontier& frontier, const VolumeMap& volume);

/// The knee in words, "" when the plan has none.
[[nodiscard]] std::string knee_text(const Frontier& frontier);

}  // namespace guestfrag::cli
