// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/session.hpp"

#include <utility>
#include <vector>

#include "core/estimate/workload.hpp"
#include "core/image/layer_provisioning.hpp"

namespace guestfrag::gui {

PlanResult plan_and_assess(const OpenedImage& opened, std::size_t volume, const PlanRequest& request,
                           const Progress& progress) {
    const Workload workload = parse_workload(request.workload);
    // Writes go to the top layer: its provisioning decides the first writes, as in the CLI.
    std::vector<ProvisioningOverride> overrides;
    if (request.provisioning) overrides.push_back({0, *request.provisioning});
    ImpactOptions impact = request.impact;
    impact.provisioning =
        effective_provisioning(opened.image->layers(), overrides, request.zero_block).front();
    // The core's basis names the CLI's option; the window's user set it in a dialog.
    if (request.provisioning) impact.provisioning->basis = "set in Settings ▸ Storage model";
    // Prepared once: a trace order reads its trace for the plan and for every frontier point.
    const PlanOptions options = prepare_plan_options(opened, volume, request.options);
    PlanResult out{plan_volume(opened, volume, options, progress), {}, {}, {}, {}};
    out.estimate = estimate_volume(opened, volume, workload, kDefaultMaxIo, &out, impact.models, progress,
                                   impact.provisioning);
    try {
        out.impact = plan_impact(opened, out, impact, progress);
        add_copy_advice(out.impact->warnings, plan_copy_states(opened, out));
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Cancelled) throw;
        out.impact_error = e.what();
    }
    out.frontier = plan_frontier(opened.analysis->volumes.at(volume).map, out.plan);
    return out;
}

}  // namespace guestfrag::gui
