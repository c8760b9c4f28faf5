// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <utility>

#include "core/apply/rehearsal.hpp"
#include "core/estimate/trace_source.hpp"
#include "core/image/open_image.hpp"
#include "core/impact/plan_writes.hpp"
#include "core/plan/apply.hpp"

namespace guestfrag {

namespace {

PlanIdentity identity_of(const OpenedImage& opened, const VolumeMap& volume) {
    return identify(volume, opened.image->path(), opened.image->size());
}

/// Amends `after` (apply_plan's) and `plan`'s summary by what libntfs-3g does to the records
/// of the files whose layout the moves may change (rehearse_moves), and refuses a plan that
/// apply would not carry out whole: the fault of guestfrag for a plan it has just `made`,
/// of the plan file otherwise. The summary is kept in step, unless the plan has none
/// (PlanOptions::carried_out_at_once, replay_plan_file: a plan that moves anything has a
/// summary of its moves otherwise).
void rehearse(const OpenedImage& opened, const VolumeMap& before, VolumeMap& after, Plan& plan, bool made) {
    const std::vector<std::uint64_t> files = files_to_rehearse(before, after, plan);
    if (files.empty()) return;
    const Rehearsal rehearsal =
        rehearse_moves(*opened.image, volume_window(*opened.analysis, before), before, plan, files);
    if (!rehearsal.skipped.empty()) {
        const SkippedMove& first = rehearsal.skipped.front();
        const Move& move = plan.moves[first.index];
        throw Error(made ? ErrorKind::Unfinished : ErrorKind::Corrupt,
                    "apply would not carry out move " + std::to_string(first.index + 1) +
                        " of the plan (record " + std::to_string(move.mft_record) + " " +
                        std::string(move.stream) + "): " + first.reason);
    }
    if (adopt_rehearsal(after, rehearsal) && plan.summary.moves != 0)
        plan.summary =
            summarize_plan(before, after, opened.analysis->layers, plan.summary.granule_size, plan);
}

}  // namespace

OpenedImage open_and_analyze(const std::string& path, const OpenOptions& options, std::optional<int> partition,
                             const Progress& progress) {
    std::vector<std::string> files;
    OpenOptions recording = options;
    recording.opened = [&files](const std::string& file) { files.push_back(file); };
    OpenedImage opened = analyze_opened(open_image(path, recording), partition, progress);
    opened.files = std::move(files);
    return opened;
}

OpenedImage open_and_hold(const std::string& path, const OpenOptions& options, std::optional<int> partition,
                          const Progress& progress) {
    std::vector<std::string> files;
    OpenOptions recording = options;
    recording.opened = [&files](const std::string& file) { files.push_back(file); };
    std::shared_ptr<const DiskImage> image = open_image(path, recording);
    auto hold = std::make_shared<const InputHold>(files);
    OpenedImage opened = analyze_opened(std::move(image), partition, progress);
    opened.hold = std::move(hold);
    opened.files = std::move(files);
    return opened;
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

VolumeWindow volume_window(const ImageAnalysis& analysis, const VolumeMap& map) {
    for (const Partition& p : analysis.table.partitions)
        if (p.number == map.partition) return {p.start, p.length};
    throw Error(ErrorKind::Internal, "the analysed partition is not in the table");
}

PlanOptions prepare_plan_options(const OpenedImage& opened, std::size_t volume, PlanOptions options) {
    const std::optional<PlacementOrder> order = effective_order(options);
    if (order && order->kind == PlacementOrder::Kind::Trace && !options.trace_paths)
        options.trace_paths =
            load_trace(order->trace_source, *opened.image, opened.analysis->volumes.at(volume).map);
    return options;
}

PlannedVolume plan_volume(const OpenedImage& opened, std::size_t volume, const PlanOptions& options,
                          const Progress& progress) {
    const ImageAnalysis& analysis = *opened.analysis;
    const VolumeMap& before = analysis.volumes.at(volume).map;
    const PlanIdentity identity = options.carried_out_at_once ? PlanIdentity{} : identity_of(opened, before);
    PlanOutcome outcome = plan_and_apply(before, analysis.layers, identity,
                                         prepare_plan_options(opened, volume, options), progress);
    rehearse(opened, before, outcome.after, outcome.plan, true);
    return {volume, std::move(outcome.plan), std::make_shared<const VolumeMap>(std::move(outcome.after))};
}

VolumeMap replay_plan_file(const OpenedImage& opened, std::size_t volume, Plan& plan) {
    const VolumeMap& before = opened.analysis->volumes.at(volume).map;
    check_identity(plan.identity, identity_of(opened, before));
    VolumeMap after = apply_plan(before, plan);
    plan.summary = {};  // the file's, of the volume it was planned on: no longer the plan's
    return after;
}

void rehearse_plan_file(const OpenedImage& opened, std::size_t volume, VolumeMap& after, Plan& plan) {
    rehearse(opened, opened.analysis->volumes.at(volume).map, after, plan, false);
}

PlannedVolume adopt_plan(const OpenedImage& opened, std::size_t volume, Plan plan,
                         std::optional<std::uint64_t> granule) {
    // The saved summary's granule, read before replay_plan_file empties the summary.
    const std::uint64_t granule_size = granule.value_or(plan.summary.granule_size);
    VolumeMap after = replay_plan_file(opened, volume, plan);
    rehearse_plan_file(opened, volume, after, plan);
    plan.summary = summarize_plan(opened.analysis->volumes.at(volume).map, after, opened.analysis->layers,
                                  granule_size, plan);
    return {volume, std::move(plan), std::make_shared<const VolumeMap>(std::move(after))};
}

Impact plan_impact(const OpenedImage& opened, const PlannedVolume& planned, const ImpactOptions& options,
                   const Progress& progress) {
    const ImageAnalysis& analysis = *opened.analysis;
    const VolumeMap& before = analysis.volumes.at(planned.volume).map;
    const Plan& plan = planned.plan;
    PlanSummary summary = plan.summary;
    if (options.granule != plan.summary.granule_size)
        summary = planned.after ? summarize_plan(before, *planned.after, analysis.layers, options.granule, plan)
                                : summarize_plan(before, apply_plan(before, plan), analysis.layers, options.granule, plan);
    return assess_impact(*opened.image, analysis.table, before, plan, summary, options, progress);
}

CopyStates plan_copy_states(const OpenedImage& opened, const PlannedVolume& planned, const CopyOptions& copy) {
    const VolumeMap& before = opened.analysis->volumes.at(planned.volume).map;
    const std::vector<Layer>& layers = opened.image->layers();
    return copy_states(layers, top_layer_after_plan(layers.front(), before, planned.plan).layer, copy);
}

void add_copy_advice(std::vector<ImpactWarning>& warnings, const CopyStates& states) {
    for (const CopyWarning& advice : states.advice)
        warnings.push_back({advice.code,
                            advice.code == "COPY_PLAN_SCATTERS" ? Severity::Warning : Severity::Info,
                            states.after_plan.bytes, advice.message});
    std::stable_sort(warnings.begin(), warnings.end(),
                     [](const ImpactWarning& a, const ImpactWarning& b) { return a.severity > b.severity; });
}

namespace {

/// Sets `out.after`: out's settled workload replayed on the volume `planned` leaves.
void estimate_after_plan(VolumeEstimate& out, const WrittenMap& written, const VolumeMap& before,
                         const PlannedVolume& planned, const DeviceModels& models) {
    // The plan has written its destinations by then: those blocks are no first writes.
    const WrittenMap after_plan = written_after_plan(written, before, planned.plan);
    out.after = estimate_workload(*planned.after, out.workload, models, &after_plan);
}

/// estimate_volume on `before`, a volume of `image` or, for a whole-disk job, an empty map.
VolumeEstimate estimate_on(const DiskImage& image, const VolumeMap& before, const Workload& workload,
                           const IoShape& shape, const PlannedVolume* planned, const DeviceModels& models,
                           const Progress& progress, const std::optional<LayerProvisioning>& provisioning) {
    VolumeEstimate out;
    out.partition = before.partition;
    const Layer& top = image.layers().front();
    out.provisioning = provisioning.value_or(top.provisioning);
    progress.update(0, 1);
    const WrittenMap written = WrittenMap::from_layer(top, out.provisioning.zero_block);
    out.workload = prepare_workload(workload, shape, image, before);
    out.before = estimate_workload(before, out.workload, models, &written);
    if (planned) {
        progress.update(0, 1);
        estimate_after_plan(out, written, before, *planned, models);
    }
    progress.update(0, 1);
    return out;
}

}  // namespace

VolumeEstimate estimate_volume(const OpenedImage& opened, std::size_t volume, const Workload& workload,
                               const IoShape& shape, const PlannedVolume* planned, const DeviceModels& models,
                               const Progress& progress,
                               const std::optional<LayerProvisioning>& provisioning) {
    return estimate_on(*opened.image, opened.analysis->volumes.at(volume).map, workload, shape, planned,
                       models, progress, provisioning);
}

VolumeEstimate estimate_after(const OpenedImage& opened, const VolumeEstimate& before,
                              const PlannedVolume& planned, const DeviceModels& models) {
    VolumeEstimate out = before;
    const WrittenMap written =
        WrittenMap::from_layer(opened.image->layers().front(), out.provisioning.zero_block);
    estimate_after_plan(out, written, opened.analysis->volumes.at(planned.volume).map, planned, models);
    return out;
}

VolumeEstimate estimate_disk(const DiskImage& image, const Workload& workload, const IoShape& shape,
                             const DeviceModels& models,
                             const std::optional<LayerProvisioning>& provisioning) {
    if (workload.kind != Workload::Kind::Fio || workload.fio.target != FioJob::Target::Disk)
        throw Error(ErrorKind::Unsupported, "only a fio job with target=disk runs on a disk without an NTFS volume");
    // The job's IOs come from the disk's size alone; the map is there for the signature.
    const VolumeMap none;
    VolumeEstimate out = estimate_on(image, none, workload, shape, nullptr, models, {}, provisioning);
    out.no_volume = true;
    return out;
}

IoStats traced_stats(const OpenedImage& opened, std::size_t volume, const std::string& trace,
                     const DeviceModels& models) {
    std::optional<std::vector<Io>> ios = read_io_trace(trace);
    if (!ios)
        throw Error(ErrorKind::Unsupported, "trace file " + trace +
                                                " is not an IO trace (an nbdkit log, blkparse output or a "
                                                "vscsiStats trace as CSV)");
    const VolumeMap& map = opened.analysis->volumes.at(volume).map;
    IoSummary summary(models);
    IoTraceReplay(map, std::move(*ios)).replay(map, [&summary](const Io& io) { summary.add(io); });
    return summary.stats();
}

}  // namespace guestfrag
