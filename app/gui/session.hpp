// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/impact/impact.hpp"
#include "core/plan/frontier.hpp"
#include "core/plan/planner.hpp"
#include "core/progress.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag::gui {

/// What the plan panel asks for, on the storage the window's settings describe.
struct PlanRequest {
    PlanOptions options;
    ImpactOptions impact;  ///< its device models time the estimate too
    std::string workload = "scan";
    /// The top layer's provisioning type and every layer's zeroing block instead of the
    /// detected ones (unset: as detected), as --provisioning and --zero-block set them.
    std::optional<Provisioning> provisioning;
    std::optional<std::uint64_t> zero_block;
};

/// A plan for one volume, the volume after it, the workload's estimate on both states and
/// the plan's storage impact: the figures of `guestfrag report` and `guestfrag impact`.
struct PlanResult : PlannedVolume {
    VolumeEstimate estimate;  ///< before and after the plan
    std::optional<Impact> impact;
    std::string impact_error;  ///< why `impact` is missing, when it is
    Frontier frontier;         ///< the same plan under budgets of moved data (plan --frontier)
};

/// The pipeline's plan_volume, estimate_volume (IOs of at most kDefaultMaxIo, on the
/// impact's device models), plan_impact
/// (its warnings with the copy advice of plan_copy_states added) and the plan's frontier, in
/// the order the window shows them. The estimate and the impact count first writes with the
/// top layer's provisioning as the request leaves it (effective_provisioning). An impact
/// failure does not lose the plan: it is reported in impact_error. Throws Error (Cancelled from `progress`,
/// Unsupported for a bad workload, ...) for the rest.
[[nodiscard]] PlanResult plan_and_assess(const OpenedImage& opened, std::size_t volume, const PlanRequest& request,
                                         const Progress& progress);

}  // namespace guestfrag::gui
