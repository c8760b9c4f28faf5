// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/strategy_option.hpp"

#include <string>
#include <vector>

#include "app/cli/failure.hpp"
#include "core/error.hpp"
#include "core/estimate/workload.hpp"

namespace guestfrag::cli {

CLI::Validator strategy_check() {
    std::vector<std::string> names;
    for (const Strategy s : kStrategies) names.emplace_back(strategy_name(s));
    return CLI::IsMember(names);
}

CLI::Validator order_check() {
    return CLI::Validator(
        [](const std::string& text) -> std::string {
            try {
                (void)parse_order(text);
                return {};
            } catch (const Error& e) {
                return e.what();
            }
        },
        kOrderForms);
}

CLI::Validator workload_check() {
    return CLI::Validator(
        [](const std::string& text) {
            try {
                (void)parse_workload(text);
                return std::string();
            } catch (const Error& e) {
                return std::string(e.what());
            }
        },
        kWorkloadForms);
}

std::optional<PlacementOrder> order_option(const std::string& text, Strategy strategy) {
    if (text.empty()) return std::nullopt;
    PlanOptions options;
    options.strategy = strategy;
    options.order = parse_order(text);
    try {
        (void)effective_order(options);
    } catch (const Error& e) {
        throw Failure("--order", e.what(), kUsage);
    }
    return options.order;
}

}  // namespace guestfrag::cli
