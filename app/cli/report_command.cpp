// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag report IMAGE`: analysis, a recommended plan per volume, its storage impact and
// its effect on a workload's IO, for people. Every figure comes from the same functions as
// `analyze`, `plan`, `impact` and `estimate`, so each can be reproduced with those commands.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/analysis_json.hpp"
#include "app/cli/analysis_text.hpp"
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

namespace guestfrag::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string why(const ImageAnalysis& analysis, Strategy strategy, bool chosen_by_user) {
    if (chosen_by_user) return "as requested";
    if (strategy == Strategy::Defrag) return "the disk is fully allocated (thick)";
    if (analysis.layers.size() > 1) return "the disk is a linked clone / has a parent layer: thin-safe causes no growth";
    return "the disk is thin (not fully allocated): thin-safe causes no growth";
}

}  // namespace

void add_report_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::optional<std::string> strategy;
        std::optional<int> partition;
        ImageOptions image_options;
        CopyOptionTexts copy;
        ProvisioningOptions provisioning;
        std::string preset = "default";
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
    cmd->add_option("--partition", opts->partition, "Report only this partition number");
    add_image_options(*cmd, opts->image_options);
    add_copy_options(*cmd, opts->copy);
    add_provisioning_options(*cmd, opts->provisioning);
    add_preset_option(*cmd, opts->preset);
    cmd->add_option("--workload", opts->workload, "Workload of the IO estimate (see `estimate`)")
        ->capture_default_str();
    cmd->add_option("--top", opts->top, "Most fragmented files to list")->capture_default_str();
    cmd->add_flag(
        "--json", opts->json,
        "Print the guestfrag.report.v1 JSON document (analysis, and per volume its plan and impact)");
    cmd->callback([opts] {
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
            impact_options.models = *device_preset(opts->preset);
            impact_options.provisioning =
                layer_provisioning(opened.image->layers(), opts->provisioning).front();

            PlanOptions options;
            options.strategy = opts->strategy ? *parse_strategy(*opts->strategy)
                                              : recommended_strategy(analysis.layers, analysis.virtual_size);
            std::vector<VolumeEstimate> estimates;
            Json volumes = Json::array();
            for (std::size_t volume = 0; volume < analysis.volumes.size(); ++volume) {
                const VolumeMap& before = analysis.volumes[volume].map;
                const std::string reason = why(analysis, options.strategy, opts->strategy.has_value());
                const PlannedVolume planned = [&] {
                    ProgressMeter meter("planning");
                    return plan_volume(opened, volume, options, meter.progress());
                }();
                const Impact impact = plan_impact(opened, volume, planned.plan, impact_options);
                const CopyStates states = plan_copy_states(opened, volume, planned.plan, copy);
                if (opts->json) {
                    volumes.push_back({{"partition", before.partition},
                                       {"strategy", std::string(strategy_name(options.strategy))},
                                       {"why", reason},
                                       {"plan", Json::parse(plan_to_json(planned.plan, before))},
                                       {"impact", impact_to_json(impact, states, opened.image->path(), "")}});
                    continue;
                }
                std::cout << "\nRecommended strategy for partition " << before.partition << ": "
                          << strategy_name(options.strategy) << " (" << reason << ")\n";
                print_plan_summary(std::cout, planned.plan, before, opts->image);
                const Frontier frontier = plan_frontier(before, analysis.layers, planned.plan, options);
                if (const std::string knee = knee_text(frontier); !knee.empty())
                    std::cout << "  knee of the trade-off (plan --frontier): " << knee << '\n';
                std::cout << "\nImpact of this plan on the storage\n";
                print_impact(std::cout, impact, states);
                estimates.push_back(estimate_volume(opened, volume, workload, kDefaultMaxIo, &planned,
                                                    impact_options.models, {}, impact_options.provisioning));
            }
            if (opts->json) {
                // The IO estimate is `estimate --plan PLAN --json` with each volume's plan.
                const Json doc = {{"schema", "guestfrag.report.v1"},
                                  {"analysis", analysis_to_json(analysis, false)},
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
