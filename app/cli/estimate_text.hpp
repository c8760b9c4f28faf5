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

}  // namespace guestfrag::cli
