// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/estimate/guest_model.hpp"
#include "core/estimate/workload.hpp"
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
    GuestProfile guest = default_guest_profile();  ///< how the workload's reads reach the disk
    /// The top layer's provisioning type and every layer's zeroing block instead of the
    /// detected ones (unset: as detected), as --provisioning and --zero-block set them.
    std::optional<Provisioning> provisioning;
    std::optional<std::uint64_t> zero_block;
};

/// The figures shown beside a plan. Each costs a replay of the volume (seconds at a million
/// files), so each is computed when a tab or an export first needs it (assess_plan).
enum class Figure : unsigned {
    Estimate = 1,  ///< the IO histograms tab
    Impact = 2,    ///< the Impact tab
    Frontier = 4,  ///< the Trade-off tab
};
using Figures = unsigned;  ///< a set of Figure bits
[[nodiscard]] constexpr Figures only(Figure f) noexcept { return static_cast<Figures>(f); }
[[nodiscard]] constexpr Figures operator|(Figure a, Figure b) noexcept { return only(a) | only(b); }
[[nodiscard]] constexpr bool includes(Figures set, Figure f) noexcept { return (set & only(f)) != 0; }

/// The figures computed so far; unset: not yet asked for.
struct PlanFigures {
    /// Those of `wanted` not computed yet.
    [[nodiscard]] Figures missing(Figures wanted) const noexcept;
    std::optional<VolumeEstimate> estimate;  ///< before and after the plan
    std::optional<Impact> impact;
    std::string impact_error;          ///< why `impact` is missing after its assessment
    std::optional<Frontier> frontier;  ///< the same plan under budgets of moved data (plan --frontier)

    [[nodiscard]] bool has(Figure f) const noexcept;
    /// Takes the figures `other` has.
    void merge(PlanFigures&& other);
};

/// A plan for one volume, the volume after it, the settings its figures are computed on and
/// those computed so far: the figures of `guestfrag report` and `guestfrag impact`.
struct PlanResult : PlannedVolume, PlanFigures {
    Workload workload;             ///< the request's, parsed
    GuestProfile guest;            ///< the request's
    ImpactOptions impact_options;  ///< with the top layer's effective provisioning
};

/// The pipeline's plan_volume with the request's workload and storage prepared for the
/// figures: the estimate and the impact count first writes with the top layer's
/// provisioning as the request leaves it (effective_provisioning). Throws Error (Cancelled
/// from `progress`, Unsupported for a bad workload, ...).
[[nodiscard]] PlanResult plan_for_window(const OpenedImage& opened, std::size_t volume, const PlanRequest& request,
                                         const Progress& progress);

/// The figures of `wanted` that `plan` lacks, in the order the window's tabs show them:
/// estimate_volume (the plan's guest, IOs of at most kDefaultMaxIo, on the impact's device models),
/// plan_impact (its warnings with the copy advice of plan_copy_states added) and plan_frontier. An impact
/// failure is reported in impact_error, not thrown; other errors (Cancelled, Unsupported for
/// a workload the volume cannot run) are thrown.
[[nodiscard]] PlanFigures assess_plan(const OpenedImage& opened, const PlanResult& plan, Figures wanted,
                                      const Progress& progress);

}  // namespace guestfrag::gui
