// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/strategy_option.hpp"

#include <string>
#include <vector>

#include "core/plan/planner.hpp"

namespace guestfrag::cli {

CLI::Validator strategy_check() {
    std::vector<std::string> names;
    for (const Strategy s : kStrategies) names.emplace_back(strategy_name(s));
    return CLI::IsMember(names);
}

}  // namespace guestfrag::cli
