// SPDX-License-Identifier: GPL-2.0-or-later
// The verdict for people and scripts (docs/verdict.md): the first screen of `report` and
// `analyze --check`, and the `verdict` object of their JSON.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "pipeline/verdict.hpp"

namespace guestfrag::cli {

/// The verdict's lines for volume `volume` of `analysis`: the decision, what it buys and
/// costs, whether it can run offline now, the plans weighed and the volume in brief; at most
/// 100 columns and about 25 lines. A volume without a verdict gets one line,
/// "Partition N: no verdict: WHY".
void print_verdict(std::ostream& out, const ImageAnalysis& analysis, std::size_t volume,
                   const VolumeVerdict& verdict, const std::string& image);

/// The `verdict` object of the JSON documents: decision, reason, blockers, device, workload,
/// the workload's seconds now and every plan weighed with the rule's figures; for a volume
/// without a verdict, action "unavailable" and the reason.
[[nodiscard]] nlohmann::ordered_json verdict_to_json(const VolumeVerdict& verdict);

/// What `analyze --check` exits with: 0 no action, 5 a plan is worth running and can run
/// offline now, 6 a plan is worth running but something blocks an offline run now.
[[nodiscard]] int check_status(const Verdict& verdict) noexcept;

}  // namespace guestfrag::cli
