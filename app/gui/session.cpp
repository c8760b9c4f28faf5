// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/session.hpp"

#include "core/estimate/workload.hpp"
#include "core/image/open_image.hpp"
#include "core/plan/apply.hpp"

namespace guestfrag::gui {

OpenedImage open_and_analyze(const std::string& path, const std::vector<std::string>& parents,
                             const Progress& progress) {
    std::shared_ptr<const DiskImage> image = open_image(path, parents);
    auto analysis = std::make_shared<const ImageAnalysis>(analyze_image(*image, std::nullopt, progress));
    return {std::move(image), std::move(analysis)};
}

PlanResult plan_volume(const OpenedImage& opened, std::size_t volume, const PlanRequest& request,
                       const Progress& progress) {
    const ImageAnalysis& analysis = *opened.analysis;
    const VolumeAnalysis& va = analysis.volumes.at(volume);
    const VolumeMap& before = va.map;
    const Workload workload = parse_workload(request.workload);

    PlanResult out;
    out.volume = volume;
    PlanOutcome outcome = plan_and_apply(before, analysis.layers,
                                         identify(before, opened.image->path(), opened.image->size()),
                                         request.options, progress);
    out.free_space_after = analyze_free_space(outcome.after);
    // The core leaves these to whoever links the analyzers (see PlanSummary).
    outcome.plan.summary.free_space_fragmentation_percent_before = va.free_space.fragmentation_percent;
    outcome.plan.summary.free_space_fragmentation_percent_after = out.free_space_after.fragmentation_percent;
    out.plan = std::move(outcome.plan);
    out.after = std::make_shared<const VolumeMap>(std::move(outcome.after));

    // The estimator takes no Progress: check for Cancel between its steps at least.
    progress.update(0, 1);
    out.workload = prepare_workload(workload, kDefaultMaxIo, *opened.image, before);
    out.before = estimate_workload(before, out.workload);
    progress.update(0, 1);
    out.after_estimate = estimate_workload(*out.after, out.workload);
    progress.update(0, 1);

    try {
        out.impact = assess_impact(*opened.image, analysis.table, before, out.plan, request.impact, progress);
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Cancelled) throw;
        out.impact_error = e.what();
    }
    return out;
}

}  // namespace guestfrag::gui
