// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <ostream>
#include <span>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"
#include "pipeline/verdict.hpp"

namespace guestfrag::cli {

/// A HostLayout (docs/metrics.md §6) as `analyze` and `impact` write it.
[[nodiscard]] nlohmann::ordered_json host_layout_json(const HostLayout& host);

/// A layer's provisioning as `analyze`, `estimate` and `impact` write it: type, zero_block,
/// assumed, basis.
[[nodiscard]] nlohmann::ordered_json provisioning_json(const LayerProvisioning& p);

/// One CopyFigures as `image.copy.chain` prints it (docs/copy.md §6).
[[nodiscard]] nlohmann::ordered_json copy_figures_json(const CopyFigures& figures);

/// The `guestfrag.analysis.v1` document (docs/design.md §6, contract) without the streams
/// of `--files`. Each layer's provisioning is `provisioning[i]` when given (one per layer),
/// else as detected.
[[nodiscard]] nlohmann::ordered_json analysis_to_json(const ImageAnalysis& analysis,
                                                      std::span<const LayerProvisioning> provisioning = {});

/// Writes the analysis_to_json document, dumped with an indent of 2, and a newline; with
/// `with_streams`, each volume's "streams" (--files) last, written one stream at a time;
/// each volume's "verdict" (verdict_to_json) when `verdicts` has one per volume.
void write_analysis_json(std::ostream& out, const ImageAnalysis& analysis, bool with_streams,
                         std::span<const LayerProvisioning> provisioning = {},
                         std::span<const VolumeVerdict> verdicts = {});

}  // namespace guestfrag::cli
