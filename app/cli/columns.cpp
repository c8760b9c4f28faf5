// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/columns.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "app/cli/help_format.hpp"

namespace guestfrag::cli {

std::string fixed(double value, int decimals) {
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*f", decimals, value);
    return buf.data();
}

std::string seconds_text(double seconds) { return fixed(seconds, seconds < 10 ? 2 : 1) + " s"; }

std::string pad(const std::string& s, std::size_t width, bool right) {
    if (s.size() >= width) return s;
    return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string hanging(const std::string& left, const std::string& text) {
    return left + wrapped(text, std::min<std::size_t>(help_width(), 100), left.size()) + '\n';
}

}  // namespace guestfrag::cli
