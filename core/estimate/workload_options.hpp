// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace guestfrag {

/// The option lists of the `fio:` and `install:` workloads (docs/estimate.md §2) share one
/// syntax, comma-separated KEY=VALUE with sizes as fio writes them, and one error form:
/// Error(Unsupported, "WORKLOAD option 'KEY': reason"), which the CLI reports as a bad
/// option (exit 1).

/// Throws Error(Unsupported, "<workload> option '<key>': <reason>").
[[noreturn]] void bad_workload_option(std::string_view workload, std::string_view key, const std::string& reason);

/// Calls `visit(key, value)` for each comma-separated KEY=VALUE of `options`, in order
/// (an empty list visits nothing). An item without '=' is a bad option.
void for_each_workload_option(std::string_view workload, std::string_view options,
                              const std::function<void(std::string_view key, std::string_view value)>& visit);

/// A non-negative decimal whole number; anything else is a bad option.
[[nodiscard]] std::uint64_t parse_option_number(std::string_view workload, std::string_view key,
                                                std::string_view text);

/// A size as fio writes it: digits with an optional k, m, g or t (any case, an optional
/// trailing b or ib), binary multiples (fio's default kb_base=1024). Anything else, or a
/// value beyond 64 bits, is a bad option.
[[nodiscard]] std::uint64_t parse_option_size(std::string_view workload, std::string_view key, std::string_view text);

}  // namespace guestfrag
