// SPDX-License-Identifier: GPL-2.0-or-later
// Sizes as people write and read them, the same in every front end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace guestfrag {

/// Parses "4096", "64K", "64KiB", "1MiB", "2G", "1.5GiB" (binary multiples; K = KiB).
/// Returns nullopt for malformed text or values that overflow 64 bits. O(length).
[[nodiscard]] std::optional<std::uint64_t> parse_size(std::string_view text);

/// Parses a positive rate in bytes per second: a size as parse_size takes it, optionally
/// followed by "/s" ("50MiB/s", "200M"). Returns nullopt for anything else, 0 included.
[[nodiscard]] std::optional<std::uint64_t> parse_rate(std::string_view text);

/// "512 B", "4.0 KiB", "1.50 MiB", "12.3 GiB": three significant digits, binary units.
[[nodiscard]] std::string format_size(std::uint64_t bytes);

}  // namespace guestfrag
