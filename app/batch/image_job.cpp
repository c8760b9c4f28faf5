// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/image_job.hpp"

#include <chrono>
#include <new>

#include "analyzers/analysis.hpp"
#include "app/batch/fingerprint.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/image/throttled_image.hpp"
#include "core/impact/impact.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"

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

void plan_volume(VolumeResult& r, const VolumeAnalysis& v, const ImageAnalysis& a, const DiskImage& image,
                 const JobOptions& options, const std::stop_token& stop) {
    PlanOptions plan_options;
    plan_options.strategy = options.strategy.value_or(recommended_strategy(a.layers, a.virtual_size));
    PlanOutcome outcome = plan_and_apply(v.map, a.layers, identify(v.map, image.path(), image.size()), plan_options,
                                         Progress{{}, stop});
    outcome.plan.summary.free_space_fragmentation_percent_before = v.free_space.fragmentation_percent;
    outcome.plan.summary.free_space_fragmentation_percent_after =
        analyze_free_space(outcome.after).fragmentation_percent;
    r.warnings = assess_impact(image, a.table, v.map, outcome.plan).warnings;
    r.plan = VolumeResult::PlanResult{outcome.plan.strategy, outcome.plan.summary, plan_to_json(outcome.plan, v.map)};
}

}  // namespace

ImageResult run_image_job(const std::string& path, const JobOptions& options, RateLimiter& limiter,
                          std::stop_token stop) {
    const auto start = std::chrono::steady_clock::now();
    ImageResult result;
    result.path = path;
    const ThrottledImage* throttled = nullptr;
    std::unique_ptr<DiskImage> image;
    try {
        result.fingerprint = fingerprint(path);
        auto opened = std::make_unique<ThrottledImage>(open_image(path), limiter, stop);
        throttled = opened.get();
        image = std::move(opened);
        const ImageAnalysis analysis = analyze_image(*image, std::nullopt, Progress{{}, stop});
        result.format = analysis.format;
        result.virtual_size = analysis.virtual_size;
        result.layers = static_cast<int>(analysis.layers.size());
        if (!analysis.layers.empty()) result.allocated_bytes = analysis.layers.front().allocated_bytes();
        for (const VolumeAnalysis& v : analysis.volumes) {
            result.volumes.push_back(volume_result(v));
            if (options.plan) plan_volume(result.volumes.back(), v, analysis, *image, options, stop);
        }
        result.ok = true;
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Cancelled || stop.stop_requested()) throw Error(ErrorKind::Cancelled, "interrupted");
        result.ok = false;
        result.error = e.what();
        result.volumes.clear();
    } catch (const std::bad_alloc&) {
        result.ok = false;
        result.error = "out of memory while reading image structures";
        result.volumes.clear();
    }
    if (throttled) result.bytes_read = throttled->bytes_read();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace guestfrag::batch
