// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include "core/estimate/io_stats.hpp"

namespace guestfrag::cli {

/// An IO stream's summary as `estimate --json` and `analyze --json` print it: ios, bytes,
/// mean_io_bytes, sequential_percent, device_seconds and the vscsiStats histograms
/// (docs/design.md §4).
[[nodiscard]] nlohmann::ordered_json io_stats_json(const IoStats& s);

/// Eager, lazy and thin side by side (docs/estimate.md §8.2): per type its IOs, first
/// writes and, per device model, device_seconds, iops, mb_per_second and
/// mean_latency_seconds. `estimate --json`'s `provisioned` and `impact --json`'s
/// `plan_writes.provisioned`.
[[nodiscard]] nlohmann::ordered_json provisioned_json(const IoStats& s);

}  // namespace guestfrag::cli
