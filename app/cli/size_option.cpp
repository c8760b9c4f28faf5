// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/size_option.hpp"

#include <string_view>

#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

CLI::Validator size_check() {
    return CLI::Validator(
        [](const std::string& text) {
            return parse_size(text) ? std::string() : "'" + text + "' is not a size (e.g. 4096, 64K, 1MiB, 2G)";
        },
        "SIZE");
}

std::optional<std::uint64_t> size_option(const std::string& text) {
    if (text.empty()) return std::nullopt;
    return parse_size(text);
}

CLI::Validator rate_check() {
    return CLI::Validator(
        [](const std::string& text) {
            return parse_rate(text) ? std::string() : "'" + text + "' is not a rate (e.g. 50MiB/s, 200M)";
        },
        "SIZE/s");
}

std::uint64_t rate_option(const std::string& text) { return text.empty() ? 0 : parse_rate(text).value_or(0); }

}  // namespace guestfrag::cli
