// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <ostream>
#include <string>

#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag::cli {

/// A plan's summary for people: moves, data moved, before -> after figures, growth, the
/// reasons streams were skipped (grouped) and the planner's notes.
void print_plan_summary(std::ostream& out, const Plan& plan, const VolumeMap& volume, const std::string& image);

}  // namespace guestfrag::cli
