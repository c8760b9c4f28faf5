// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/sizes.hpp"

#include <array>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace guestfrag {

std::optional<std::uint64_t> parse_rate(std::string_view text) {
    if (text.ends_with("/s")) text.remove_suffix(2);
    const auto rate = parse_size(text);
    return rate && *rate > 0 ? rate : std::nullopt;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
    double value = 0;
    const auto* begin = text.data();
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr == begin || value < 0) return std::nullopt;
    std::string_view unit(ptr, static_cast<std::size_t>(end - ptr));
    if (unit.ends_with("iB")) unit.remove_suffix(2);
    else if (unit.size() == 2 && (unit[1] == 'B' || unit[1] == 'b')) unit.remove_suffix(1);
    static constexpr std::string_view kUnits = "KMGTPE";
    double multiplier = 1;
    if (unit == "B" || unit.empty()) {
        multiplier = 1;
    } else if (unit.size() == 1) {
        const auto pos = kUnits.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
        if (pos == std::string_view::npos) return std::nullopt;
        multiplier = std::ldexp(1.0, 10 * static_cast<int>(pos + 1));
    } else {
        return std::nullopt;
    }
    const double bytes = value * multiplier;
    if (bytes >= 18446744073709551616.0 || bytes != std::floor(bytes)) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
}

std::string format_size(std::uint64_t bytes) {
    static constexpr std::array<const char*, 7> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < kUnits.size()) {
        value /= 1024;
        ++unit;
    }
    std::array<char, 32> buf{};
    const int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
    std::snprintf(buf.data(), buf.size(), "%.*f %s", decimals, value, kUnits[unit]);
    return buf.data();
}

}  // namespace guestfrag
