// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

namespace guestfrag {

/// Whether every byte of `bytes` is zero. Compared a page at a time with memcmp against a
/// page of zeros, whose vectorised loop is several times quicker than a byte-wise test on
/// the gigabytes a copy or a sparsifying pass looks at.
[[nodiscard]] inline bool all_zero(std::span<const std::byte> bytes) noexcept {
    static constexpr std::size_t kStep = 4096;
    static constexpr std::byte kZeros[kStep] = {};
    for (std::size_t at = 0; at < bytes.size(); at += kStep) {
        const std::size_t n = std::min(kStep, bytes.size() - at);
        if (std::memcmp(bytes.data() + at, kZeros, n) != 0) return false;
    }
    return true;
}

}  // namespace guestfrag
