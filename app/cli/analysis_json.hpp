// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <span>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"

namespace guestfrag::cli {

/// The `guestfrag.analysis.v1` document (docs/design.md §6, contract); streams only when
/// `with_streams` (--files).
/// A HostLayout (docs/metrics.md §6) as `analyze` and `impact` write it.
[[nodiscard]] nlohmann::ordered_json host_layout_json(const HostLayout& host);

/// Each layer's provisioning is `provisioning[i]` when given (one per layer), else as detected.
[[nodiscard]] nlohmann::ordered_json analysis_to_json(const ImageAnalysis& analysis, bool with_streams,
                                                      std::span<const LayerProvisioning> provisioning = {});

}  // namespace guestfrag::cli
