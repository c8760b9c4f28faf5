// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <ostream>
#include <span>
#include <string>

#include "analyzers/analysis.hpp"

namespace guestfrag::cli {

/// "12 extent(s), 11 seek(s) (3 backward), 0.52% fragmented" for a HostLayout.
[[nodiscard]] std::string host_layout_text(const HostLayout& host);

/// The analysis for people: each volume (aligned tables, binary sizes, the `top` most
/// fragmented files, all fragmented streams with `all_files`), then the image: layers, copy
/// costs, partitions. Each layer's provisioning is `provisioning[i]` when given (one per
/// layer), else as detected.
void print_analysis(std::ostream& out, const ImageAnalysis& analysis, std::size_t top, bool all_files,
                    std::span<const LayerProvisioning> provisioning = {});

}  // namespace guestfrag::cli
