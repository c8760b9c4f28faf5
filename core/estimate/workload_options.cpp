// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/workload_options.hpp"

#include <charconv>

#include "core/error.hpp"

namespace guestfrag {

void bad_workload_option(std::string_view workload, std::string_view key, const std::string& reason) {
    throw Error(ErrorKind::Unsupported,
                std::string(workload) + " option '" + std::string(key) + "': " + reason);
}

void for_each_workload_option(std::string_view workload, std::string_view options,
                              const std::function<void(std::string_view key, std::string_view value)>& visit) {
    while (!options.empty()) {
        const std::size_t comma = options.find(',');
        const std::string_view item = options.substr(0, comma);
        options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
        const std::size_t eq = item.find('=');
        const std::string_view key = item.substr(0, eq);
        if (eq == std::string_view::npos) bad_workload_option(workload, key, "needs a value (KEY=VALUE)");
        visit(key, item.substr(eq + 1));
    }
}

std::uint64_t parse_option_number(std::string_view workload, std::string_view key, std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        bad_workload_option(workload, key, "'" + std::string(text) + "' is not a non-negative whole number");
    return value;
}

std::uint64_t parse_option_size(std::string_view workload, std::string_view key, std::string_view text) {
    const auto not_a_size = [&] {
        bad_workload_option(workload, key, "'" + std::string(text) + "' is not a size (e.g. 4k, 10g)");
    };
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    std::string suffix(text.substr(digits));
    for (char& c : suffix) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    for (const std::string_view unit : {"ib", "b"})
        if (suffix.size() > unit.size() && suffix.ends_with(unit)) suffix.resize(suffix.size() - unit.size());
    unsigned shift = 0;
    if (suffix.size() == 1) {
        switch (suffix[0]) {
            case 'k': shift = 10; break;
            case 'm': shift = 20; break;
            case 'g': shift = 30; break;
            case 't': shift = 40; break;
            default: not_a_size();
        }
    } else if (!suffix.empty() && suffix != "b") {
        not_a_size();
    }
    if (digits == 0) not_a_size();
    const std::uint64_t value = parse_option_number(workload, key, text.substr(0, digits));
    if (value > (UINT64_MAX >> shift)) bad_workload_option(workload, key, "'" + std::string(text) + "' is too large");
    return value << shift;
}

}  // namespace guestfrag
