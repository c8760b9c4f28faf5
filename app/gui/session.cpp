// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/session.hpp"

#include <utility>
#include <vector>

#include "core/image/layer_provisioning.hpp"

namespace guestfrag::gui {

bool PlanFigures::has(Figure f) const noexcept {
    switch (f) {
        case Figure::Estimate:
            return estimate.has_value();
        case Figure::Impact:
            return impact.has_value() || !impact_error.empty();
        case Figure::Frontier:
            return frontier.has_value();
    }
    return false;
}

Figures PlanFigures::missing(Figures wanted) const noexcept {
    Figures out = 0;
    for (const Figure f : {Figure::Estimate, Figure::Impact, Figure::Frontier})
        if (includes(wanted, f) && !has(f)) out |= only(f);
    return out;
}

void PlanFigures::merge(PlanFigures&& other) {
    if (other.estimate) estimate = std::move(other.estimate);
    if (other.has(Figure::Impact)) {
        impact = std::move(other.impact);
        impact_error = std::move(other.impact_error);
    }
    if (other.frontier) frontier = std::move(other.frontier);
}

PlanResult plan_for_window(const OpenedImage& opened, std::size_t volume, const PlanRequest& request,
                           const Progress& progress) {
    PlanResult out;
    // Parsed before planning: a workload the window cannot run is refused at once.
    out.workload = parse_workload(request.workload);
    out.guest = request.guest;
    // Writes go to the top layer: its provisioning decides the first writes, as in the CLI.
    std::vector<ProvisioningOverride> overrides;
    if (request.provisioning) overrides.push_back({0, *request.provisioning});
    out.impact_options = request.impact;
    out.impact_options.provisioning =
        effective_provisioning(opened.image->layers(), overrides, request.zero_block).front();
    // The core's basis names the CLI's option; the window's user set it in a dialog.
    if (request.provisioning) out.impact_options.provisioning->basis = "set in Settings ▸ Storage model";
    static_cast<PlannedVolume&>(out) =
        plan_volume(opened, volume, prepare_plan_options(opened, volume, request.options), progress);
    return out;
}

PlanFigures assess_plan(const OpenedImage& opened, const PlanResult& plan, Figures wanted, const Progress& progress) {
    const Figures missing = plan.missing(wanted);
    const auto asked = [missing](Figure f) { return includes(missing, f); };
    PlanFigures out;
    if (asked(Figure::Estimate))
        out.estimate =
            estimate_volume(opened, plan.volume, plan.workload, IoShape{kDefaultMaxIo, plan.guest}, &plan,
                            plan.impact_options.models, progress, plan.impact_options.provisioning);
    if (asked(Figure::Impact)) {
        try {
            out.impact = plan_impact(opened, plan, plan.impact_options, progress);
            add_copy_advice(out.impact->warnings, plan_copy_states(opened, plan));
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::Cancelled) throw;
            out.impact_error = e.what();
        }
    }
    if (asked(Figure::Frontier)) out.frontier = plan_frontier(opened.analysis->volumes.at(plan.volume).map, plan.plan);
    return out;
}

}  // namespace guestfrag::gui
