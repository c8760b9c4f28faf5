// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag report IMAGE`: the verdict per volume (docs/verdict.md) first; with --verbose
// the analysis, the chosen plan, its storage impact and its effect on a workload's IO. Every figure comes
// from the same functions as `analyze`, `plan`, `impact` and `estimate`, so each can be reproduced with those
// commands.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/analysis_json.hpp"
#include "app/cli/analysis_text.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/copy_options.hpp"
#include "app/cli/dedup_option.hpp"
#include "app/cli/estimate_text.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/guest_option.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/impact_json.hpp"
#include "app/cli/impact_text.hpp"
#include "app/cli/plan_text.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/provisioning_options.hpp"
#include "app/cli/strategy_option.hpp"
#include "app/cli/verdict_text.hpp"
#include "core/estimate/workload.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/verdict.hpp"

namespace guestfrag::cli {
namespace {

using Json = nlohmann::ordered_json;

/// The plan whose details report shows: the verdict's, or when it is no action and the user
/// named a strategy, the weighed plan of that strategy that saves the most.
std::optional<std::size_t> shown_plan(const VolumeVerdict& weighed, bool strategy_asked) {
    if (!weighed.verdict) return std::nullopt;
    const Verdict& v = *weighed.verdict;
    if (v.chosen || !strategy_asked || v.plans.empty()) return v.chosen;
    const auto most = std::ranges::max_element(
        v.plans, {}, [&](const WeighedPlan& p) { return on_device(p.saved, v.device); });
    return static_cast<std::size_t>(most - v.plans.begin());
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
        std::string decide_on = "array";
        std::string workload = "scan";
        std::string dedup_chunk;
        GuestOptions guest;
        std::size_t top = 10;
        bool verbose = false;
        bool json = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "report", "Whether to defragment, with which plan, what it buys and costs (nothing is written)");
    cmd->add_option("IMAGE", opts->image, "Disk image")->required();
    cmd->add_option("--strategy", opts->strategy,
                    "Weigh only this strategy (see Strategies below; default: every strategy)")
        ->check(strategy_check());
    cmd->add_option("--order", opts->order,
                    "Order to weigh (default: the strategy's default and the workload's order: mft for scan, "
                    "path for scan:path, the trace for trace:)")
        ->check(order_check());
    cmd->add_option("--partition", opts->partition, "Report only this partition number");
    add_image_options(*cmd, opts->image_options);
    add_copy_options(*cmd, opts->copy);
    add_provisioning_options(*cmd, opts->provisioning);
    add_device_options(*cmd, opts->device);
    cmd->add_option("--decide-on", opts->decide_on,
                    "Device model the verdict weighs seconds on: hdd, ssd or array")
        ->check(CLI::IsMember({"hdd", "ssd", "array"}))
        ->capture_default_str();
    cmd->add_option("--workload", opts->workload, "Workload the verdict weighs (see Workloads below)")
        ->check(workload_check())
        ->capture_default_str();
    add_dedup_chunk_option(*cmd, opts->dedup_chunk);
    add_guest_options(*cmd, opts->guest);
    cmd->add_option("--top", opts->top, "Most fragmented files to list (--verbose)")->capture_default_str();
    cmd->add_flag("--verbose", opts->verbose,
                  "After the verdict: the analysis, the chosen plan, its storage impact and IO estimate");
    cmd->add_flag(
        "--json", opts->json,
        "Print the guestfrag.report.v1 JSON document (analysis, and per volume the verdict, its plan "
        "and impact)");
    cmd->footer(std::string(kStrategyMeanings) + kOrderMeanings + kWorkloadMeanings + kGuestMeanings +
                "Example:\n  guestfrag report disk.vmdk --decide-on hdd --workload trace:@prefetch\n");
    cmd->callback([opts] {
        const std::optional<Strategy> chosen =
            opts->strategy ? parse_strategy(*opts->strategy) : std::nullopt;
        const std::optional<PlacementOrder> order =
            order_option(opts->order, chosen.value_or(Strategy::Defrag));
        const DeviceModels models = device_models(opts->device);
        on_behalf_of(opts->image, [&] {
            VerdictOptions rule;
            rule.workload = parse_workload(opts->workload);
            rule.guest = guest_option(opts->guest);
            rule.device = *parse_device(opts->decide_on);
            rule.models = models;
            rule.strategy = chosen;
            rule.order = order;
            rule.dedup_chunk = dedup_chunk_option(opts->dedup_chunk);
            const CopyOptions copy = copy_options(opts->copy);
            const OpenedImage opened =
                open_and_analyze_image(opts->image, opts->image_options, opts->partition, copy);
            const ImageAnalysis& analysis = *opened.analysis;
            // One provisioning and one set of device models for the plan's own IO and the
            // workload's, as `impact` and `estimate` take them.
            rule.provisioning = layer_provisioning(opened.image->layers(), opts->provisioning).front();

            std::vector<VolumeVerdict> verdicts;
            for (std::size_t volume = 0; volume < analysis.volumes.size(); ++volume) {
                ProgressMeter meter("weighing plans");
                verdicts.push_back(decide_volume(opened, volume, rule, meter.progress()));
            }
            if (opts->json) {
                Json volumes = Json::array();
                for (std::size_t volume = 0; volume < verdicts.size(); ++volume) {
                    const VolumeVerdict& v = verdicts[volume];
                    Json entry = {{"partition", v.partition}, {"verdict", verdict_to_json(v)}};
                    if (const auto shown = shown_plan(v, chosen.has_value())) {
                        const WeighedPlan& p = v.verdict->plans[*shown];
                        entry["strategy"] = std::string(strategy_name(p.options.strategy));
                        entry["order"] =
                            p.planned.plan.order.empty() ? Json(nullptr) : Json(p.planned.plan.order);
                        entry["plan"] =
                            Json::parse(plan_to_json(p.planned.plan, analysis.volumes[volume].map));
                        entry["impact"] = impact_to_json(p.impact, plan_copy_states(opened, p.planned, copy),
                                                         opened.image->path(), "");
                    }
                    volumes.push_back(std::move(entry));
                }
                const Json doc = {{"schema", "guestfrag.report.v1"},
                                  {"analysis", analysis_to_json(analysis)},
                                  {"volumes", std::move(volumes)}};
                std::cout << doc.dump(2) << '\n';
                return;
            }
            for (std::size_t volume = 0; volume < verdicts.size(); ++volume) {
                if (volume > 0) std::cout << '\n';
                print_verdict(std::cout, analysis, volume, verdicts[volume], opts->image);
            }
            if (!opts->verbose) {
                std::cout
                    << "\nThe analysis, the plan, its storage impact and IO estimate: the same command with "
                       "--verbose\n";
                return;
            }
            std::cout << '\n';
            print_analysis(std::cout, analysis, opts->top, false);
            for (std::size_t volume = 0; volume < verdicts.size(); ++volume) {
                const auto shown = shown_plan(verdicts[volume], chosen.has_value());
                if (!shown) continue;
                const Verdict& v = *verdicts[volume].verdict;
                const WeighedPlan& p = v.plans[*shown];
                const VolumeMap& before = analysis.volumes[volume].map;
                std::cout << "\n"
                          << (v.chosen ? "The chosen plan" : "The plan asked for (not worth running)")
                          << " for partition " << v.partition << '\n';
                print_plan_summary(std::cout, p.planned.plan, before, opts->image);
                const Frontier frontier = plan_frontier(before, p.planned.plan);
                if (const std::string knee = knee_text(frontier); !knee.empty())
                    std::cout << hanging("  knee of the trade-off (plan --frontier): ", knee);
                std::cout << "\nImpact of this plan on the storage\n";
                print_impact(std::cout, p.impact,
                             plan_copy_states(opened, p.planned, copy));
                std::cout << '\n';
                print_estimate(std::cout, opened.image->path(), p.estimate.workload,
                               std::string("the plan above"), std::vector{p.estimate});
            }
        });
    });
}

}  // namespace guestfrag::cli
