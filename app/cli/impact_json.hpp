// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analyzers/copy_cost.hpp"
#include "core/impact/impact.hpp"

namespace guestfrag::cli {

/// The plan's own IO (docs/impact.md §10): `figures.plan_writes` of the impact document.
[[nodiscard]] nlohmann::ordered_json plan_writes_json(const PlanWrites& writes);

/// The copy figures of the three states and their advice (docs/copy.md §7): `copy` of
/// the impact document.
[[nodiscard]] nlohmann::ordered_json copy_states_json(const CopyStates& states);

/// The `guestfrag.impact.v1` document (docs/design.md §5 contract, extra fields in
/// docs/impact.md), with the copy states as `copy`.
[[nodiscard]] nlohmann::ordered_json impact_to_json(const Impact& impact, const CopyStates& copy,
                                                    const std::string& image, const std::string& plan);

}  // namespace guestfrag::cli
