// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/analysis.hpp"
#include "core/estimate/estimate.hpp"
#include "core/impact/impact.hpp"
#include "core/image/disk_image.hpp"
#include "core/plan/planner.hpp"
#include "core/progress.hpp"

namespace guestfrag::gui {

/// An opened and analysed image: what the window shows until another image is opened.
/// Both parts are immutable and shared with worker threads (DiskImage reads are thread-safe).
struct OpenedImage {
    std::shared_ptr<const DiskImage> image;
    std::shared_ptr<const ImageAnalysis> analysis;
};

/// open_image followed by analyze_image over every NTFS volume, exactly as `guestfrag
/// analyze` does. Throws whatever those throw (Error, with Cancelled from `progress`).
[[nodiscard]] OpenedImage open_and_analyze(const std::string& path, const std::vector<std::string>& parents,
                                           const Progress& progress);

/// What the plan panel asks for.
struct PlanRequest {
    PlanOptions options;
    ImpactOptions impact;
    std::string workload = "scan";
};

/// A plan for one volume, the volume after it, the workload's estimate on both states and
/// the plan's storage impact: the figures of `guestfrag report` and `guestfrag impact`.
struct PlanResult {
    std::size_t volume = 0;  ///< index into ImageAnalysis::volumes
    Plan plan;
    std::shared_ptr<const VolumeMap> after;
    FreeSpaceFragmentation free_space_after;
    PreparedWorkload workload;
    WorkloadEstimate before;
    WorkloadEstimate after_estimate;
    std::optional<Impact> impact;
    std::string impact_error;  ///< why `impact` is missing, when it is
};

/// plan_and_apply, prepare_workload + estimate_workload on before and after, assess_impact.
/// An impact failure does not lose the plan: it is reported in impact_error. Throws Error
/// (Cancelled from `progress`, Unsupported for a bad workload, ...) for the rest.
[[nodiscard]] PlanResult plan_volume(const OpenedImage& opened, std::size_t volume, const PlanRequest& request,
                                     const Progress& progress);

}  // namespace guestfrag::gui
