// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include "core/plan/frontier.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// Reads a `guestfrag.plan.v1` JSON file. Throws Error(NotFound) / Error(Corrupt, "...")
/// for unreadable or malformed documents (wrong schema, missing or out-of-range fields,
/// absurd numbers), naming the first offending move ("move 17: ...").
[[nodiscard]] Plan read_plan(const std::string& path);

/// The `guestfrag.plan.v1` JSON text of `plan` with its summary figures, and the
/// trade-off curve under "frontier" when one is given (read_plan ignores it).
[[nodiscard]] std::string plan_to_json(const Plan& plan, const VolumeMap& before, const Frontier* frontier = nullptr);

}  // namespace guestfrag
