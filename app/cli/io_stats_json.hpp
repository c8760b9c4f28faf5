// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include "core/estimate/io_stats.hpp"

namespace guestfrag::cli {

/// An IO stream's summary as `estimate --json` and `analyze --json` print it: ios, bytes,
/// mean_io_bytes, sequential_percent, device_seconds and the vscsiStats histograms
/// (docs/design.md §4).
[[nodiscard]] nlohmann::ordered_json io_stats_json(const IoStats& s);

}  // namespace guestfrag::cli
