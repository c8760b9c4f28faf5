// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/strategy_option.hpp"

#include <functional>
#include <string>
#include <vector>

#include "app/cli/failure.hpp"
#include "core/error.hpp"
#include "core/estimate/workload.hpp"

namespace guestfrag::cli {
namespace {

/// Accepts what `parse` (which throws Error) accepts; the Error's message is the usage error.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse, const char* description) {
    return CLI::Validator(
        [parse = std::move(parse)](const std::string& text) -> std::string {
            try {
                parse(text);
                return {};
            } catch (const Error& e) {
                return e.what();
            }
        },
        description);
}

}  // namespace

CLI::Validator strategy_check() {
    std::vector<std::string> names;
    for (const Strategy s : kStrategies) names.emplace_back(strategy_name(s));
    return CLI::IsMember(names);
}

CLI::Validator order_check() {
    return parsed_by([](const std::string& text) { (void)parse_order(text); }, kOrderForms);
}

CLI::Validator workload_check() {
    return parsed_by([](const std::string& text) { (void)parse_workload(text); }, kWorkloadForms);
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
