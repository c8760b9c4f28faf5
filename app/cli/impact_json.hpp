// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/impact/impact.hpp"

namespace guestfrag::cli {

/// The `guestfrag.impact.v1` document (docs/design.md §5 contract, extra fields in docs/impact.md).
[[nodiscard]] nlohmann::ordered_json impact_to_json(const Impact& impact, const std::string& image,
                                                    const std::string& plan);

}  // namespace guestfrag::cli
