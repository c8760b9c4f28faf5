// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/session.hpp"

#include <utility>

#include "core/estimate/workload.hpp"

namespace guestfrag::gui {

PlanResult plan_and_assess(const OpenedImage& opened, std::size_t volume, const PlanRequest& request,
                           const Progress& progress) {
    const Workload workload = parse_workload(request.workload);
    // Prepared once: a trace order reads its trace for the plan and for every frontier point.
    const PlanOptions options = prepare_plan_options(opened, volume, request.options);
    PlanResult out{plan_volume(opened, volume, options, progress), {}, {}, {}, {}};
    out.estimate = estimate_volume(opened, volume, workload, kDefaultMaxIo, &out, request.impact.models, progress);
    try {
        out.impact = plan_impact(opened, out, request.impact, progress);
        add_copy_advice(out.impact->warnings, plan_copy_states(opened, out));
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Cancelled) throw;
        out.impact_error = e.what();
    }
    out.frontier = plan_frontier(opened.analysis->volumes.at(volume).map, out.plan);
    return out;
}

}  // namespace guestfrag::gui
