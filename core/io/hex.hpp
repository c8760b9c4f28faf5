// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace guestfrag {

/// `value` as 16 lower-case hex digits: how a plan file, its identity checks and the
/// analysis JSON write a volume serial or a digest (a JSON number loses bits above 2^53).
[[nodiscard]] inline std::string hex16(std::uint64_t value) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(16, '0');
    for (std::size_t i = 16; i-- > 0; value >>= 4) out[i] = kDigits[value & 0xF];
    return out;
}

}  // namespace guestfrag
