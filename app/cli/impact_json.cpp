// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/impact_json.hpp"

#include "app/cli/analysis_json.hpp"
#include "app/cli/io_stats_json.hpp"

namespace guestfrag::cli {

namespace {

using Json = nlohmann::ordered_json;

Json dedup_json(const DedupFigures& d) {
    Json j = {{"chunk", d.chunk}, {"changed_chunks", d.changed_chunks}, {"changed_bytes", d.changed_chunks * d.chunk}};
    if (d.deep) {
        j["chunks"] = d.deep->chunks;
        j["rewritten_chunks"] = d.deep->rewritten_chunks;
        j["unique_chunks_before"] = d.deep->unique_before;
        j["unique_chunks_after"] = d.deep->unique_after;
        j["dedup_ratio_before"] = d.deep->ratio_before();
        j["dedup_ratio_after"] = d.deep->ratio_after();
    }
    return j;
}

Json state_json(std::uint64_t commands, double average_bytes, double seconds) {
    return {{"commands", commands}, {"average_bytes", average_bytes}, {"seconds", seconds}};
}

}  // namespace

Json plan_writes_json(const PlanWrites& w) {
    const IoStats& s = w.stats;
    return {{"max_io", w.max_io},
            {"provisioning", provisioning_json(w.provisioning)},
            {"ios", s.ios},
            {"bytes", s.bytes},
            {"reads", s.ios - s.writes},
            {"read_bytes", s.bytes - s.written_bytes},
            {"writes", s.writes},
            {"written_bytes", s.written_bytes},
            {"zero_block", s.zero_block},
            {"first_writes", s.first_writes},
            {"into_written_bytes", w.into_written_bytes},
            {"into_new_bytes", w.into_new_bytes},
            {"device_seconds",
             {{"hdd", s.device_seconds.hdd},
              {"ssd", s.device_seconds.ssd},
              {"array", s.device_seconds.array}}},
            {"provisioned", provisioned_json(s)}};
}

Json copy_states_json(const CopyStates& states) {
    Json table = Json::array();
    for (std::size_t i = 0; i < states.now.offload.size() && i < states.after_plan.offload.size(); ++i) {
        const OffloadFigures& n = states.now.offload[i];
        const OffloadFigures& a = states.after_plan.offload[i];
        table.push_back(
            {{"transfer_size", n.transfer_size},
             {"command_limit", n.command_limit},
             {"now", state_json(n.commands, n.average_bytes, n.seconds)},
             {"after_plan", state_json(a.commands, a.average_bytes, a.seconds)},
             {"relaid", state_json(a.relaid_commands, a.relaid_average_bytes, a.relaid_seconds)}});
    }
    Json advice = Json::array();
    for (const CopyWarning& w : states.advice) advice.push_back({{"code", w.code}, {"message", w.message}});
    const OffloadFigures* reference = reference_offload(states.now);
    return {{"states", std::move(table)},
            {"reference_transfer_size", reference ? reference->transfer_size : 0},
            {"advice", std::move(advice)},
            {"now", copy_figures_json(states.now)},
            {"after_plan", copy_figures_json(states.after_plan)}};
}

Json impact_to_json(const Impact& impact, const CopyStates& copy, const std::string& image,
                    const std::string& plan) {
    Json snapshot = Json::array();
    for (const SnapshotDelta& s : impact.snapshot)
        snapshot.push_back({{"granularity", s.granularity}, {"tracker", s.tracker}, {"bytes", s.bytes}});
    Json dedup = Json::array();
    for (const DedupFigures& d : impact.dedup) dedup.push_back(dedup_json(d));
    Json alignment = Json::array();
    for (const AlignmentFigures& a : impact.alignment)
        alignment.push_back({{"partition", a.partition},
                             {"start", a.start},
                             {"length", a.length},
                             {"aligned_1mib", a.aligned_1mib},
                             {"misaligned_chunks", a.misaligned_chunks}});
    Json warnings = Json::array();
    for (const ImpactWarning& w : impact.warnings)
        warnings.push_back(
            {{"code", w.code}, {"severity", severity_name(w.severity)}, {"bytes", w.bytes}, {"message", w.message}});

    // docs/design.md §5 names snapshot_delta_bytes once: it is the 4 KiB figure (the finest
    // tracker); every granularity is in snapshot_deltas.
    const std::uint64_t snapshot_delta = impact.snapshot.empty() ? 0 : impact.snapshot.front().bytes;
    return {{"schema", "guestfrag.impact.v1"},
            {"image", image},
            {"plan", plan},
            {"partition", impact.partition},
            {"figures",
             {{"granule_size", impact.granule_size},
              {"moved_bytes", impact.moved_bytes},
              {"written_bytes", impact.written_bytes},
              {"thin_growth_bytes", impact.growth.thin_growth_bytes},
              {"clone_delta_growth_bytes", impact.growth.clone_delta_growth_bytes},
              {"reclaimable_bytes_before", impact.reclaimable_bytes_before},
              {"reclaimable_bytes_after", impact.reclaimable_bytes_after},
              {"reclaim_how", impact.reclaim_how},
              {"snapshot_delta_bytes", snapshot_delta},
              {"snapshot_deltas", std::move(snapshot)},
              {"dedup", std::move(dedup)},
              {"vss",
               {{"catalog", impact.vss.catalog},
                {"store_files", impact.vss.store_files},
                {"store_bytes", impact.vss.store_bytes},
                {"cluster_size", impact.vss.cluster_size},
                {"copy_on_write", impact.vss.copy_on_write},
                {"copy_on_write_bytes", impact.vss.copy_on_write_bytes}}},
              {"alignment", std::move(alignment)},
              {"clone",
               {{"parent_layers", impact.clone.parent_layers},
                {"shared_bytes", impact.clone.shared_bytes},
                {"sharing_lost_bytes", impact.clone.sharing_lost_bytes}}},
              {"host",
               {{"before", host_layout_json(impact.host.before)},
                {"after", host_layout_json(impact.host.after)},
                {"new_bytes", impact.host.new_bytes},
                {"in_place", impact.host.in_place}}},
              {"plan_writes", plan_writes_json(impact.plan_writes)}}},
            {"copy", copy_states_json(copy)},
            {"warnings", std::move(warnings)}};
}

}  // namespace guestfrag::cli
