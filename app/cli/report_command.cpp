// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag report IMAGE`: analysis, a recommended plan per volume, its storage impact and
// its effect on a workload's IO, for people. Every figure comes from the same functions as
// `analyze`, `plan`, `impact` and `estimate`, so each can be reproduced with those commands.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "app/cli/analysis_json.hpp"
#include "app/cli/analysis_text.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/copy_options.hpp"
#include "app/cli/estimate_text.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/impact_json.hpp"
#include "app/cli/impact_text.hpp"
#include "app/cli/plan_text.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/provisioning_options.hpp"
#include "app/cli/strategy_option.hpp"
#include "core/estimate/workload.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {
namespace {

using Json = nlohmann::ordered_json;

/// One strategy and order the report weighs: its plan, the workload before and after it,
/// and the device seconds the plan saves (before − after).
struct Candidate {
    PlanOptions options;
    PlannedVolume planned;
    VolumeEstimate estimate;
    DeviceSeconds saved;
};

/// The order that lays streams out the way `workload` reads them: its trace, the scan's
/// order; mft (the scan's) for workloads that read no files in an order.
PlacementOrder order_for(const Workload& workload) {
    if (workload.kind == Workload::Kind::Trace) return {PlacementOrder::Kind::Trace, workload.trace_source};
    if (workload.kind == Workload::Kind::Scan && workload.scan_order == Workload::ScanOrder::Path)
        return {PlacementOrder::Kind::Path, {}};
    return {PlacementOrder::Kind::Mft, {}};
}

/// The strategy and order pairs to weigh (docs/planner.md, `guestfrag report`): the given
/// strategy, else defrag, consolidate and optimize on a thick disk and the recommended one
/// alone on a thin or cloned disk (where the others grow it); each with the given order,
/// else with size and the workload's order.
std::vector<PlanOptions> candidates_for(const ImageAnalysis& analysis,
                                        const std::optional<Strategy>& strategy,
                                        const std::optional<PlacementOrder>& order,
                                        const Workload& workload) {
    std::vector<Strategy> strategies;
    if (strategy) {
        strategies = {*strategy};
    } else if (const Strategy r = recommended_strategy(analysis.layers, analysis.virtual_size);
               r != Strategy::Defrag) {
        strategies = {r};
    } else {
        strategies = {Strategy::Defrag, Strategy::Consolidate, Strategy::Optimize};
    }
    std::vector<PlanOptions> out;
    for (const Strategy s : strategies) {
        PlanOptions o;
        o.strategy = s;
        if (!takes_order(s)) {
            out.push_back(o);
            continue;
        }
        const std::vector<PlacementOrder> orders =
            order ? std::vector{*order} : std::vector{PlacementOrder{}, order_for(workload)};
        for (const PlacementOrder& each : orders) {
            o.order = each;
            out.push_back(o);
        }
    }
    return out;
}

/// Seconds saved on the device the report ranks by: the array (guest disks live on shared
/// storage), then HDD, then SSD; less data moved breaks a tie.
bool better(const Candidate& a, const Candidate& b) {
    const auto key = [](const Candidate& c) {
        return std::tuple{-c.saved.array, -c.saved.hdd, -c.saved.ssd, c.planned.plan.summary.moved_bytes};
    };
    return key(a) < key(b);
}

void print_candidates(std::ostream& out, const std::vector<Candidate>& candidates, const Candidate& best,
                      const Workload& workload) {
    out << "\nSeconds each plan saves on " << workload.text() << " (estimate --plan, before − after)\n";
    out << "  " << pad("strategy, order", 28) << pad("moved", 12, true) << pad("HDD", 12, true)
        << pad("SSD", 12, true) << pad("array", 12, true) << '\n';
    for (const Candidate& c : candidates) {
        const std::string name = std::string(strategy_name(c.options.strategy)) +
                                 (c.planned.plan.order.empty() ? "" : ", " + c.planned.plan.order);
        out << (&c == &best ? "* " : "  ") << pad(name, 28)
            << pad(format_size(c.planned.plan.summary.moved_bytes), 12, true)
            << pad(seconds_text(c.saved.hdd), 12, true) << pad(seconds_text(c.saved.ssd), 12, true)
            << pad(seconds_text(c.saved.array), 12, true) << '\n';
    }
}

std::string why(const ImageAnalysis& analysis, bool chosen_by_user) {
    if (chosen_by_user) return "as requested";
    if (recommended_strategy(analysis.layers, analysis.virtual_size) == Strategy::Defrag)
        return "the disk is fully allocated (thick)";
    if (analysis.layers.size() > 1) return "the disk is a linked clone / has a parent layer: thin-safe causes no growth";
    return "the disk is thin (not fully allocated): thin-safe causes no growth";
}

}  // namespace

void add_report_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::optional<std::string> strategy;
        std::string order;
        std::optional<int> partition;
        ImageOptions image_options;
        CopyOptionTexts copy;
        ProvisioningOptions provisioning;
        DeviceOptions device;
        std::string workload = "scan";
        std::size_t top = 10;
        bool json = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "report", "Analysis, recommended plan, its storage impact and before/after IO estimate, for people (nothing is written)");
    cmd->add_option("IMAGE", opts->image, "Disk image")->required();
    cmd->add_option("--strategy", opts->strategy,
                    strategy_choices() + " (default: chosen from the image's layers)")
        ->check(strategy_check());
    cmd->add_option(
           "--order", opts->order,
           "Order to weigh (default: size and the workload's order: mft for scan, path for scan:path, "
           "the trace for trace:)")
        ->check(order_check());
    cmd->add_option("--partition", opts->partition, "Report only this partition number");
    add_image_options(*cmd, opts->image_options);
    add_copy_options(*cmd, opts->copy);
    add_provisioning_options(*cmd, opts->provisioning);
    add_device_options(*cmd, opts->device);
    cmd->add_option("--workload", opts->workload, "Workload of the IO estimate (see `estimate`)")
        ->capture_default_str();
    cmd->add_option("--top", opts->top, "Most fragmented files to list")->capture_default_str();
    cmd->add_flag(
        "--json", opts->json,
        "Print the guestfrag.report.v1 JSON document (analysis, and per volume its plan and impact)");
    cmd->callback([opts] {
        const std::optional<Strategy> chosen =
            opts->strategy ? parse_strategy(*opts->strategy) : std::nullopt;
        const std::optional<PlacementOrder> order =
            order_option(opts->order, chosen.value_or(Strategy::Defrag));
        const DeviceModels models = device_models(opts->device);
        on_behalf_of(opts->image, [&] {
            const Workload workload = parse_workload(opts->workload);
            const CopyOptions copy = copy_options(opts->copy);
            const OpenedImage opened =
                open_and_analyze_image(opts->image, opts->image_options, opts->partition, copy);
            const ImageAnalysis& analysis = *opened.analysis;
            if (!opts->json) print_analysis(std::cout, analysis, opts->top, false);
            // One provisioning and one set of device models for the plan's own IO and the
            // workload's, as `impact` and `estimate` take them.
            ImpactOptions impact_options;
            impact_options.models = models;
            impact_options.provisioning =
                layer_provisioning(opened.image->layers(), opts->provisioning).front();

            std::vector<VolumeEstimate> estimates;
            Json volumes = Json::array();
            for (std::size_t volume = 0; volume < analysis.volumes.size(); ++volume) {
                const VolumeMap& before = analysis.volumes[volume].map;
                // Every candidate planned and its workload replayed; the best is the report's plan.
                std::vector<Candidate> candidates;
                for (const PlanOptions& each : candidates_for(analysis, chosen, order, workload)) {
                    const PlanOptions options = prepare_plan_options(opened, volume, each);
                    ProgressMeter meter("planning");
                    PlannedVolume planned = plan_volume(opened, volume, options, meter.progress());
                    VolumeEstimate estimate =
                        estimate_volume(opened, volume, workload, kDefaultMaxIo, &planned,
                                        impact_options.models, {}, impact_options.provisioning);
                    const DeviceSeconds& b = estimate.before.stats.device_seconds;
                    const DeviceSeconds& a = estimate.after->stats.device_seconds;
                    candidates.push_back({options,
                                          std::move(planned),
                                          std::move(estimate),
                                          {b.hdd - a.hdd, b.ssd - a.ssd, b.array - a.array}});
                }
                const Candidate& best = *std::ranges::min_element(candidates, better);
                const PlanOptions& options = best.options;
                const PlannedVolume& planned = best.planned;
                const std::string reason = why(analysis, chosen.has_value());
                const Impact impact = plan_impact(opened, planned, impact_options);
                const CopyStates states = plan_copy_states(opened, planned, copy);
                if (opts->json) {
                    Json weighed = Json::array();
                    for (const Candidate& c : candidates)
                        weighed.push_back(
                            {{"strategy", std::string(strategy_name(c.options.strategy))},
                             {"order",
                              c.planned.plan.order.empty() ? Json(nullptr) : Json(c.planned.plan.order)},
                             {"moved_bytes", c.planned.plan.summary.moved_bytes},
                             {"seconds_saved",
                              {{"hdd", c.saved.hdd}, {"ssd", c.saved.ssd}, {"array", c.saved.array}}}});
                    volumes.push_back(
                        {{"partition", before.partition},
                         {"strategy", std::string(strategy_name(options.strategy))},
                         {"order", planned.plan.order.empty() ? Json(nullptr) : Json(planned.plan.order)},
                         {"why", reason},
                         {"candidates", std::move(weighed)},
                         {"plan", Json::parse(plan_to_json(planned.plan, before))},
                         {"impact", impact_to_json(impact, states, opened.image->path(), "")}});
                    continue;
                }
                if (candidates.size() > 1) print_candidates(std::cout, candidates, best, workload);
                std::cout << "\nRecommended strategy for partition " << before.partition << ": "
                          << strategy_name(options.strategy)
                          << (planned.plan.order.empty() ? "" : ", order " + planned.plan.order) << " ("
                          << reason
                          << (candidates.size() > 1 ? "; saves the most array time on " + workload.text()
                                                    : "")
                          << ")\n";
                print_plan_summary(std::cout, planned.plan, before, opts->image);
                const Frontier frontier = plan_frontier(before, planned.plan);
                if (const std::string knee = knee_text(frontier); !knee.empty())
                    std::cout << "  knee of the trade-off (plan --frontier): " << knee << '\n';
                std::cout << "\nImpact of this plan on the storage\n";
                print_impact(std::cout, impact, states);
                estimates.push_back(best.estimate);
            }
            if (opts->json) {
                // The IO estimate is `estimate --plan PLAN --json` with each volume's plan.
                const Json doc = {{"schema", "guestfrag.report.v1"},
                                  {"analysis", analysis_to_json(analysis)},
                                  {"volumes", std::move(volumes)}};
                std::cout << doc.dump(2) << '\n';
                return;
            }
            std::cout << '\n';
            print_estimate(std::cout, opened.image->path(), estimates.back().workload,
                           std::string("recommended plan above"), estimates);
        });
    });
}

}  // namespace guestfrag::cli
