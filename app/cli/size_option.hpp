// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace guestfrag::cli {

/// Accepts what parse_size accepts (a usage error, exit 1, otherwise).
[[nodiscard]] CLI::Validator size_check();
/// The value of a size option checked by size_check(); nullopt when it was not given ("").
[[nodiscard]] std::optional<std::uint64_t> size_option(const std::string& text);

/// Accepts a positive rate: a size optionally followed by "/s" ("50MiB/s", "20M").
[[nodiscard]] CLI::Validator rate_check();
/// Bytes per second of a rate checked by rate_check(); 0 (unlimited) when not given ("").
[[nodiscard]] std::uint64_t rate_option(const std::string& text);

}  // namespace guestfrag::cli
