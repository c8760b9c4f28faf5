// SPDX-License-Identifier: GPL-2.0-or-later
// --dedup-chunk of the commands that weigh a verdict (report, analyze, batch --verdict):
// the storage deduplicates after the fact, and a plan's work adds its re-scan
// (docs/verdict.md §2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace guestfrag::cli {

void add_dedup_chunk_option(CLI::App& cmd, std::string& text);

/// The chunk in bytes, nullopt when the option was not given; a size no deduplicator uses
/// (not a power of two from 512 B to 64 MiB) is a usage error naming the option.
[[nodiscard]] std::optional<std::uint64_t> dedup_chunk_option(const std::string& text);

}  // namespace guestfrag::cli
