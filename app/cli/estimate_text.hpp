// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/estimate/estimate.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag::cli {

/// The estimate for people: totals before/after with changes, trace and write notes, and
/// both vscsiStats histograms as text bars side by side.
void print_estimate(std::ostream& out, const std::string& image, const PreparedWorkload& w,
                    const std::optional<std::string>& plan_path, const std::vector<VolumeEstimate>& volumes);

/// Eager, lazy and thin side by side on each device model (docs/estimate.md §8): a blank
/// line, `title`, then IOs, first writes and per model time, IOPS, MB/s and mean latency.
void print_provisioned(std::ostream& out, const std::string& title, const IoStats& s);

}  // namespace guestfrag::cli
