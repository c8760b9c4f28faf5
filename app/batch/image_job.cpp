// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/image_job.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>

#include "app/batch/fingerprint.hpp"
#include "app/batch/image_list.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/image/throttled_image.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/verdict.hpp"

namespace guestfrag::batch {

namespace {

VolumeResult volume_result(const VolumeAnalysis& v) {
    VolumeResult r;
    const VolumeMap& m = v.map;
    r.partition = m.partition;
    r.start = m.partition_offset;
    r.length = static_cast<std::uint64_t>(m.total_clusters) * m.cluster_size;
    r.cluster_size = m.cluster_size;
    r.total_clusters = m.total_clusters;
    r.free_clusters = m.free_clusters();
    r.label = m.label;
    r.serial = m.serial;
    r.mft_records_in_use = m.mft_records_in_use;
    r.files = v.files;
    r.free_space = v.free_space;
    if (!v.layers.empty()) {
        r.reclaimable_bytes = v.layers.front().reclaimable_bytes;
        r.host = v.layers.front().host;
    }
    return r;
}

/// Plans volume `volume` and records the plan and its impact warnings (with the copy advice)
/// in `r`; returns the plan.
Plan record_plan(VolumeResult& r, const OpenedImage& opened, std::size_t volume, const JobOptions& options,
                 const std::stop_token& stop) {
    const ImageAnalysis& a = *opened.analysis;
    PlanOptions plan_options;
    plan_options.strategy = options.strategy.value_or(recommended_strategy(a.layers, a.virtual_size));
    if (takes_order(plan_options.strategy)) plan_options.order = options.order;
    const PlannedVolume planned = plan_volume(opened, volume, plan_options, Progress{{}, stop});
    ImpactOptions impact_options;
    impact_options.models = options.models;
    Impact impact = plan_impact(opened, planned, impact_options);
    r.warnings = std::move(impact.warnings);
    add_copy_advice(r.warnings, plan_copy_states(opened, planned));
    // The plan's IO on the storage as it is provisioned (eager, lazy or thin).
    const PlanWrites& writes = impact.plan_writes;
    const auto& provisioned = writes.stats.provisioned;
    const auto own = std::find_if(provisioned.begin(), provisioned.end(), [&](const ProvisionedSeconds& p) {
        return p.type == writes.provisioning.type;
    });
    r.plan = VolumeResult::PlanResult{planned.plan.strategy,
                                      planned.plan.summary,
                                      plan_to_json(planned.plan, a.volumes[volume].map),
                                      writes.stats.ios,
                                      own->first_writes,
                                      own->device_seconds};
    return planned.plan;
}

/// The verdict on volume `volume` with report's defaults and the job's models and
/// deduplication. A volume no plan can be made for (cross-linked clusters) gets "no verdict:
/// REASON"; its figures still count.
VolumeResult::VerdictResult record_verdict(const OpenedImage& opened, std::size_t volume,
                                           const JobOptions& options, const std::stop_token& stop) {
    VerdictOptions rule;
    rule.models = options.models;
    rule.dedup_chunk = options.dedup_chunk;
    VolumeResult::VerdictResult r;
    r.device = device_name(rule.device);
    r.workload = rule.workload.text();
    const VolumeVerdict weighed = decide_volume(opened, volume, rule, Progress{{}, stop});
    r.reason = weighed.reason();
    if (!weighed.verdict) return r;
    const Verdict& v = *weighed.verdict;
    r.now_seconds = v.now_seconds;
    r.blockers = v.blockers;
    if (v.chosen) {
        const WeighedPlan& p = v.plans[*v.chosen];
        r.strategy = strategy_name(p.options.strategy);
        r.order = p.planned.plan.order;
        r.saved_seconds = on_device(p.saved, v.device);
        r.plan_io_seconds = on_device(p.plan_io, v.device);
        r.work_seconds = on_device(p.storage_work(), v.device);
        r.growth_bytes = p.growth_bytes;
        r.moved_bytes = p.planned.plan.summary.moved_bytes;
    }
    return r;
}

/// Carries `plan` out as `options` says, through the pipeline's apply use case, into
/// `record`. Errors of the image propagate (the caller records them).
void apply_plan_of(const std::string& path, Plan plan, const JobOptions::Apply& options, RateLimiter& limiter,
                   const std::stop_token& stop, ApplyRecord& record) {
    ApplyOptions apply;
    apply.output = record.output;
    apply.format = options.format;
    apply.verify = options.verify;
    apply.allow_vss = options.allow_vss;
    apply.replace = false;  // an output of an earlier run, or another image's, stays as it is
    apply.limiter = &limiter;
    const ApplyResult r = apply_to_copy(path, {}, std::move(plan), apply, Progress{{}, stop});
    record.moves_planned = r.plan.moves.size();
    record.moves_done = r.moves.done.size();
    for (const SkippedMove& skip : r.moves.skipped) ++record.skipped_by_reason[skip.reason];
    record.bytes_moved = r.moves.bytes_copied;
    record.disk_bytes_written = r.disk_bytes_written;
    record.output_file_bytes = r.output_file_bytes;
    record.verification = r.verification;
    record.seconds = r.seconds;
    record.ok = true;
}

/// Compacts the image at `path` as `options` say into `record.output` and records what the
/// compaction did. Errors propagate (the caller records them).
void compact_image(const std::string& path, const JobOptions::Compact& options, RateLimiter& limiter,
                   const std::stop_token& stop, CompactRecord& record) {
    CompactOptions compact = options.options;
    compact.output = record.output;
    compact.replace = false;  // as an apply's: an earlier run's output stays as it is
    compact.limiter = &limiter;
    const CompactResult r = compact_to_copy(path, {}, compact, Progress{{}, stop});
    record.granule = r.granule;
    record.packed = r.packed;
    record.volumes = r.volumes.size();
    record.verified = compact.verify;
    for (const CompactVolume& v : r.volumes) {
        record.moves_planned += v.plan.moves.size();
        record.moves_done += v.moves.done.size();
        record.moves_skipped += v.moves.skipped.size();
        record.bytes_moved += v.moves.bytes_copied;
        if (v.verification) record.streams_hashed += v.verification->streams_hashed;
    }
    record.granules_input = r.granules_input;
    record.granules_sparsified = r.granules_sparsified;
    record.granules_packed = r.granules_packed;
    record.granules_output = r.granules_output;
    record.host_bytes_input = r.host_bytes_input;
    record.host_bytes_output = r.host_bytes_output;
    record.data_bytes_output = r.data_bytes_output;
    record.output_file_bytes = r.output_file_bytes;
    record.seconds = r.seconds;
    record.ok = true;
}

/// Runs `work`, which writes a new image from the analysed one and sets `record.ok`; when it
/// fails, `record` keeps the reason and the image fails as "WHAT: REASON" with its analysis
/// kept. A cancellation propagates: nothing is to be recorded.
template <typename Record, typename Work>
void record_outcome(ImageResult& result, Record& record, const char* what, const char* doing,
                    const std::stop_token& stop, Work&& work) {
    try {
        work();
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Cancelled || stop.stop_requested()) throw;
        record.error = e.what();
    } catch (const std::bad_alloc&) {
        record.error = std::string("out of memory while ") + doing;
    }
    if (!record.ok) {
        result.ok = false;
        result.error = std::string(what) + ": " + record.error;
    }
}

}  // namespace

ImageResult run_image_job(const std::string& path, const JobOptions& options, RateLimiter& limiter,
                          std::stop_token stop) {
    const auto start = std::chrono::steady_clock::now();
    ImageResult result;
    result.path = path;
    result.datastore = mount_point_of(path);
    // Shared with the analysis, and kept here so that bytes_read counts a failed image too.
    std::shared_ptr<const ThrottledImage> throttled;
    try {
        result.fingerprint = fingerprint(path);
        throttled = std::make_shared<const ThrottledImage>(open_image(path), limiter, stop);
        const OpenedImage opened = analyze_opened(throttled, std::nullopt, Progress{{}, stop});
        const ImageAnalysis& analysis = *opened.analysis;
        result.format = format_name(analysis.format);
        result.virtual_size = analysis.virtual_size;
        result.layers = static_cast<int>(analysis.layers.size());
        if (!analysis.layers.empty()) result.allocated_bytes = analysis.layers.front().allocated_bytes();
        // The default copy options ask for both sizes.
        const auto* at4 = offload_at(analysis.copy.chain, 4 * kCopyMiB);
        const auto* at16 = offload_at(analysis.copy.chain, 16 * kCopyMiB);
        result.copy_commands_4m = at4->commands;
        result.copy_commands_16m = at16->commands;
        result.copy_relaid_commands_4m = at4->relaid_commands;
        result.copy_relaid_commands_16m = at16->relaid_commands;
        std::vector<Plan> plans;
        for (std::size_t volume = 0; volume < analysis.volumes.size(); ++volume) {
            result.volumes.push_back(volume_result(analysis.volumes[volume]));
            if (options.plan || options.apply)
                plans.push_back(record_plan(result.volumes.back(), opened, volume, options, stop));
            if (options.verdict)
                result.volumes.back().verdict = record_verdict(opened, volume, options, stop);
        }
        result.ok = true;
        if (options.apply) {
            ApplyRecord& record = result.apply.emplace();
            record.output = options.apply->outputs.at(path);
            record.output_format = output_format_name(options.apply->format);
            record_outcome(result, record, "apply", "applying", stop, [&] {
                // A plan is one volume's; an apply writes a whole disk, so two volumes' plans
                // would need two applies, one over the other's output.
                if (plans.size() != 1)
                    throw Error(ErrorKind::Unsupported,
                                plans.empty() ? "no NTFS volume to apply a plan to"
                                              : "the image has " + std::to_string(plans.size()) +
                                                    " NTFS volumes: apply each one's plan with guestfrag apply");
                record.partition = plans.front().identity.partition;
                apply_plan_of(path, std::move(plans.front()), *options.apply, limiter, stop, record);
            });
        }
        if (options.compact) {
            CompactRecord& record = result.compact.emplace();
            record.output = options.compact->outputs.at(path);
            record.output_format = compact_format_name(options.compact->options.format);
            record_outcome(result, record, "compact", "compacting", stop,
                           [&] { compact_image(path, *options.compact, limiter, stop, record); });
        }
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Cancelled || stop.stop_requested()) throw Error(ErrorKind::Cancelled, "interrupted");
        result.ok = false;
        result.error = e.what();
        result.volumes.clear();
        result.apply.reset();
        result.compact.reset();
    } catch (const std::bad_alloc&) {
        result.ok = false;
        result.error = "out of memory while reading image structures";
        result.volumes.clear();
        result.apply.reset();
        result.compact.reset();
    }
    if (throttled) result.bytes_read = throttled->bytes_read();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace guestfrag::batch
