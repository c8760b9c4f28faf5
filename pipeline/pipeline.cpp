// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/pipeline.hpp"

#include <utility>

#include "core/image/open_image.hpp"
#include "core/plan/apply.hpp"

namespace guestfrag {

namespace {

PlanIdentity identity_of(const OpenedImage& opened, const VolumeMap& volume) {
    return identify(volume, opened.image->path(), opened.image->size());
}

}  // namespace

OpenedImage open_and_analyze(const std::string& path, const OpenOptions& options, std::optional<int> partition,
                             const Progress& progress) {
    return analyze_opened(open_image(path, options), partition, progress);
}

std::vector<std::string> layer_warnings(const DiskImage& image) {
    std::vector<std::string> out;
    for (const Layer& layer : image.layers())
        for (const std::string& warning : layer.warnings) out.push_back(layer.path + ": " + warning);
    return out;
}

OpenedImage analyze_opened(std::shared_ptr<const DiskImage> image, std::optional<int> partition,
                           const Progress& progress, const CopyOptions& copy) {
    auto analysis = std::make_shared<const ImageAnalysis>(analyze_image(*image, partition, progress, copy));
    return {std::move(image), std::move(analysis)};
}

PlannedVolume plan_volume(const OpenedImage& opened, std::size_t volume, const PlanOptions& options,
                          const Progress& progress) {
    const ImageAnalysis& analysis = *opened.analysis;
    const VolumeMap& before = analysis.volumes.at(volume).map;
    PlanOutcome outcome = plan_and_apply(before, analysis.layers, identity_of(opened, before), options, progress);
    return {volume, std::move(outcome.plan), std::make_shared<const VolumeMap>(std::move(outcome.after))};
}

PlannedVolume adopt_plan(const OpenedImage& opened, std::size_t volume, Plan plan,
                         std::optional<std::uint64_t> granule) {
    const ImageAnalysis& analysis = *opened.analysis;
    const VolumeMap& before = analysis.volumes.at(volume).map;
    check_identity(plan.identity, identity_of(opened, before));
    auto after = std::make_shared<const VolumeMap>(apply_plan(before, plan));
    plan.summary =
        summarize_plan(before, *after, analysis.layers, granule.value_or(plan.summary.granule_size), plan);
    return {volume, std::move(plan), std::move(after)};
}

Impact plan_impact(const OpenedImage& opened, std::size_t volume, const Plan& plan, const ImpactOptions& options,
                   const Progress& progress) {
    const ImageAnalysis& analysis = *opened.analysis;
    const VolumeMap& before = analysis.volumes.at(volume).map;
    check_identity(plan.identity, identity_of(opened, before));
    return assess_impact(*opened.image, analysis.table, before, plan, options, progress);
}

VolumeEstimate estimate_volume(const OpenedImage& opened, std::size_t volume, const Workload& workload,
                               std::uint64_t max_io, const VolumeMap* after, const DeviceModels& models,
                               const Progress& progress, const std::optional<LayerProvisioning>& provisioning) {
    const VolumeMap& before = opened.analysis->volumes.at(volume).map;
    VolumeEstimate out;
    out.partition = before.partition;
    const Layer& top = opened.image->layers().front();
    out.provisioning = provisioning.value_or(top.provisioning);
    progress.update(0, 1);
    const WrittenMap written = WrittenMap::from_layer(top, out.provisioning.zero_block);
    out.workload = prepare_workload(workload, max_io, *opened.image, before);
    out.before = estimate_workload(before, out.workload, models, &written);
    if (after) {
        progress.update(0, 1);
        out.after = estimate_workload(*after, out.workload, models, &written);
    }
    progress.update(0, 1);
    return out;
}

}  // namespace guestfrag
