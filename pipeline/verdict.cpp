// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>

#include "core/apply/volume_checks.hpp"
#include "core/estimate/trace_source.hpp"
#include "core/image/input_hold.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag {

namespace {

/// The order that lays streams out the way `workload` reads them: its trace, the scan's
/// order; mft (the scan's) for workloads that read no files in an order.
PlacementOrder order_for(const Workload& workload) {
    if (workload.kind == Workload::Kind::Trace) return {PlacementOrder::Kind::Trace, workload.trace_source};
    if (workload.kind == Workload::Kind::Scan && workload.scan_order == Workload::ScanOrder::Path)
        return {PlacementOrder::Kind::Path, {}};
    return {PlacementOrder::Kind::Mft, {}};
}

/// Every strategy (or the one asked for), each strategy that takes an order with its default
/// order and the workload's (or the one asked for).
std::vector<PlanOptions> candidates(const VerdictOptions& options) {
    std::vector<Strategy> strategies(kStrategies.begin(), kStrategies.end());
    if (options.strategy) strategies = {*options.strategy};
    std::vector<PlanOptions> out;
    for (const Strategy s : strategies) {
        PlanOptions o;
        o.strategy = s;
        if (!takes_order(s)) {
            out.push_back(o);
            continue;
        }
        std::vector<PlacementOrder> orders{options.order.value_or(*default_order(s))};
        if (!options.order && order_for(options.workload).text() != orders.front().text())
            orders.push_back(order_for(options.workload));
        for (const PlacementOrder& each : orders) {
            o.order = each;
            out.push_back(o);
        }
    }
    return out;
}

std::string seconds(double s) {
    char text[32];
    std::snprintf(text, sizeof text, s >= 100 ? "%.0f s" : s >= 1 ? "%.1f s" : "%.2f s", s);
    return text;
}

std::string name_of(const WeighedPlan& p) {
    return std::string(strategy_name(p.options.strategy)) +
           (p.planned.plan.order.empty() ? "" : " --order " + p.planned.plan.order);
}

/// Why the rule leaves `p` out, "" when it passes (docs/verdict.md §2).
std::string rejection(const WeighedPlan& p, double now, std::uint64_t disk, const VerdictOptions& o) {
    const double gain = on_device(p.saved, o.device);
    const double work = on_device(p.storage_work(), o.device);
    if (!p.failure.empty()) return p.failure;
    if (p.planned.plan.moves.empty()) return "moves nothing";
    if (gain < 0) return "slower than now (+" + seconds(-gain) + ")";
    if (gain < o.min_gain_seconds) return "saves under " + seconds(o.min_gain_seconds);
    if (gain < o.min_gain_share * now)
        return "saves under " + std::to_string(std::lround(o.min_gain_share * 100)) + " % of " + seconds(now);
    if (work > o.payback_runs * gain)
        return "work " + seconds(work) + " not repaid in " + std::to_string(std::lround(o.payback_runs)) +
               " runs";
    if (const std::uint64_t net = p.net_growth_bytes();
        net > 0 && static_cast<double>(net) >= o.max_growth_share * static_cast<double>(disk))
        return "net growth " + format_size(net) +
               " >= " + std::to_string(std::lround(o.max_growth_share * 100)) + " % of disk";
    return {};
}

/// What keeps an offline run from starting now: another process writing the image (qemu's
/// write lock, as apply and compact refuse it), and the volume state apply refuses.
std::vector<std::string> blockers(const OpenedImage& opened, const VolumeMap& map) {
    std::vector<std::string> out;
    if (const auto writer = held_for_writing(opened.files))
        out.push_back(*writer +
                      " is open for writing by another process (qemu's write lock): stop the VM or "
                      "qemu-nbd first");
    try {
        check_volume_state(*opened.image, volume_window(*opened.analysis, map), map, false);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::Unsafe) throw;
        out.emplace_back(e.what());
    }
    return out;
}

}  // namespace

std::string_view device_name(DecisionDevice device) noexcept {
    switch (device) {
        case DecisionDevice::Hdd:
            return "hdd";
        case DecisionDevice::Ssd:
            return "ssd";
        case DecisionDevice::Array:
            break;
    }
    return "array";
}

std::optional<DecisionDevice> parse_device(std::string_view name) noexcept {
    for (const DecisionDevice d : {DecisionDevice::Hdd, DecisionDevice::Ssd, DecisionDevice::Array})
        if (device_name(d) == name) return d;
    return std::nullopt;
}

double on_device(const DeviceSeconds& s, DecisionDevice device) noexcept {
    switch (device) {
        case DecisionDevice::Hdd:
            return s.hdd;
        case DecisionDevice::Ssd:
            return s.ssd;
        case DecisionDevice::Array:
            break;
    }
    return s.array;
}

void weigh(Verdict& v, const VerdictOptions& o) {
    v.chosen.reset();
    for (WeighedPlan& p : v.plans) p.rejected = rejection(p, v.now_seconds, v.disk_bytes, o);

    // The most seconds saved; among plans within a tenth of that, the least growth, then
    // the least data moved (docs/verdict.md §2).
    const auto gain = [&](const WeighedPlan& p) { return on_device(p.saved, o.device); };
    double best = 0;
    for (const WeighedPlan& p : v.plans)
        if (p.rejected.empty()) best = std::max(best, gain(p));
    for (std::size_t i = 0; i < v.plans.size(); ++i) {
        const WeighedPlan& p = v.plans[i];
        if (!p.rejected.empty() || gain(p) < 0.9 * best) continue;
        const auto key = [](const WeighedPlan& q) {
            return std::tuple{q.net_growth_bytes(), q.planned.plan.summary.moved_bytes};
        };
        if (!v.chosen || key(p) < key(v.plans[*v.chosen])) v.chosen = i;
    }

    const std::string on = " of " + seconds(v.now_seconds) + " on the " + std::string(device_name(o.device)) +
                           " model for " + v.workload.text();
    if (v.chosen) {
        const WeighedPlan& p = v.plans[*v.chosen];
        const double g = gain(p);
        v.reason = name_of(p) + " saves " + seconds(g) + on + " (" +
                   std::to_string(std::lround(100 * g / std::max(v.now_seconds, 1e-9))) + " %)";
    } else if (std::ranges::all_of(v.plans,
                                   [](const WeighedPlan& p) { return p.planned.plan.moves.empty(); })) {
        v.reason = "nothing to defragment: no plan weighed finds a move worth making";
    } else {
        // The plan that came closest, and why it falls short.
        const WeighedPlan& closest = *std::ranges::max_element(v.plans, {}, [&](const WeighedPlan& p) {
            return std::pair{gain(p), !p.planned.plan.moves.empty()};
        });
        v.reason = "the best plan, " + name_of(closest) + ", " + closest.rejected;
    }
}

Verdict decide(const OpenedImage& opened, std::size_t volume, const VerdictOptions& asked,
               const Progress& progress) {
    const VolumeMap& map = opened.analysis->volumes.at(volume).map;
    VerdictOptions options = asked;
    std::string fallback;
    // A trace the image itself holds (@prefetch, @layout) is not on every volume: a data
    // volume has none, and the verdict is then the default workload's, said so.
    std::optional<std::vector<std::string>> held;
    if (const Workload& w = asked.workload;
        w.kind == Workload::Kind::Trace && w.trace_source.starts_with("@")) {
        try {
            held = load_trace(w.trace_source, *opened.image, map);
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::NotFound && e.kind() != ErrorKind::Unsupported) throw;
            fallback = std::string(e.what()) + ": the verdict weighs scan instead";
            options.workload = parse_workload("scan");
            if (options.order && options.order->kind == PlacementOrder::Kind::Trace) options.order.reset();
        }
    }
    Verdict v;
    v.partition = map.partition;
    v.device = options.device;
    v.workload = options.workload;
    v.guest = options.guest;
    v.disk_bytes = opened.image->size();
    ImpactOptions impact;
    impact.models = options.models;
    impact.provisioning = options.provisioning.value_or(opened.image->layers().front().provisioning);
    impact.dedup_rescan_chunk = options.dedup_chunk;
    // A full copy's host-side reads are what the rule weighs; the offload commands are not
    // (one transfer size keeps their count cheap).
    CopyOptions copy_options;
    copy_options.transfer_sizes = {4 * kCopyMiB};
    copy_options.devices = options.models;
    // The workload on the volume as it is, settled and replayed once: every candidate's
    // before.
    const VolumeEstimate now =
        estimate_volume(opened, volume, options.workload, IoShape{kDefaultMaxIo, options.guest}, nullptr,
                        options.models, progress, impact.provisioning);
    const DeviceSeconds& b = now.before.stats.device_seconds;
    v.now_seconds = on_device(b, options.device);
    for (PlanOptions& each : candidates(options)) {
        // The trace read above orders every candidate that places by it: read once, not
        // once per candidate.
        if (held && each.order && each.order->kind == PlacementOrder::Kind::Trace &&
            each.order->trace_source == options.workload.trace_source)
            each.trace_paths = held;
        WeighedPlan p;
        p.options = prepare_plan_options(opened, volume, each);
        try {
            p.planned = plan_volume(opened, volume, p.options, progress);
        } catch (const Error& e) {
            // guestfrag's own plan that apply would not carry out: this candidate is out,
            // the others still count (a fault in the input fails them all alike).
            if (e.kind() != ErrorKind::Unfinished) throw;
            p.failure = std::string("cannot be carried out: ") + e.what();
            v.plans.push_back(std::move(p));
            continue;
        }
        p.estimate = estimate_after(opened, now, p.planned, options.models);
        const DeviceSeconds& a = p.estimate.after->stats.device_seconds;
        p.saved = {b.hdd - a.hdd, b.ssd - a.ssd, b.array - a.array};
        p.impact = plan_impact(opened, p.planned, impact);
        p.plan_io = p.impact.plan_writes.stats.device_seconds;
        p.backup_reads = p.impact.backup_delta_reads.device_seconds;
        if (p.impact.dedup_rescan_reads) p.dedup_rescan = p.impact.dedup_rescan_reads->device_seconds;
        const CopyStates copy = plan_copy_states(opened, p.planned, copy_options);
        const DeviceSeconds& c0 = copy.now.host_copy.device_seconds;
        const DeviceSeconds& c1 = copy.after_plan.host_copy.device_seconds;
        p.copy_added = {std::max(0.0, c1.hdd - c0.hdd), std::max(0.0, c1.ssd - c0.ssd),
                        std::max(0.0, c1.array - c0.array)};
        // A thick top layer (as detected or as --provisioning says) is allocated whole: the
        // plan neither grows it nor frees anything a reclaim could give back.
        const Impact& i = p.impact;
        const bool thin = i.plan_writes.provisioning.type == Provisioning::Thin;
        p.growth_bytes = (thin ? i.growth.thin_growth_bytes : 0) + i.growth.clone_delta_growth_bytes;
        p.freed_bytes = thin ? i.freed_bytes() : 0;
        if (thin) v.reclaimable_bytes = i.reclaimable_bytes_before;
        v.plans.push_back(std::move(p));
    }
    weigh(v, options);
    v.blockers = blockers(opened, map);
    v.fallback = std::move(fallback);
    return v;
}

std::string VolumeVerdict::reason() const {
    return verdict ? verdict->reason : "no verdict: " + std::string(error ? error->what() : "");
}

VolumeVerdict decide_volume(const OpenedImage& opened, std::size_t volume, const VerdictOptions& options,
                            const Progress& progress) {
    VolumeVerdict out;
    out.partition = opened.analysis->volumes.at(volume).map.partition;
    try {
        out.verdict = decide(opened, volume, options, progress);
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Cancelled) throw;
        out.error = e;
    }
    return out;
}

}  // namespace guestfrag
