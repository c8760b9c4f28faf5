// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag report IMAGE`: analysis, a recommended plan per volume, its storage impact and
// its effect on a workload's IO, for people. Every figure comes from the same functions as
// `analyze`, `plan`, `impact` and `estimate`, so each can be reproduced with those commands.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/analysis.hpp"
#include "app/cli/analysis_text.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/estimate_text.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/impact_text.hpp"
#include "app/cli/plan_text.hpp"
#include "app/cli/progress_meter.hpp"
#include "core/estimate/workload.hpp"
#include "core/image/open_image.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/planner.hpp"

namespace guestfrag::cli {
namespace {

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
        std::vector<std::string> parents;
        std::string workload = "scan";
        std::size_t top = 10;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "report", "Analysis, recommended plan, its storage impact and before/after IO estimate, for people (nothing is written)");
    cmd->add_option("IMAGE", opts->image, "Disk image")->required();
    cmd->add_option("--strategy", opts->strategy,
                    "defrag, consolidate, thin-safe or shrink (default: chosen from the image's layers)")
        ->check(CLI::IsMember({"defrag", "consolidate", "thin-safe", "shrink"}));
    cmd->add_option("--partition", opts->partition, "Report only this partition number");
    cmd->add_option("--parent", opts->parents, "Parent (backing) image for the layer at depth 1, 2, ...");
    cmd->add_option("--workload", opts->workload, "Workload of the IO estimate (see `estimate`)")
        ->capture_default_str();
    cmd->add_option("--top", opts->top, "Most fragmented files to list")->capture_default_str();
    cmd->callback([opts] {
        on_behalf_of(opts->image, [&] {
            const Workload workload = parse_workload(opts->workload);
            const auto image = open_image(opts->image, opts->parents);
            ImageAnalysis analysis;
            {
                ProgressMeter meter("reading MFT");
                analysis = analyze_image(*image, opts->partition, meter.progress());
            }
            print_analysis(std::cout, analysis, opts->top, false);

            PlanOptions options;
            options.strategy = opts->strategy ? *parse_strategy(*opts->strategy)
                                              : recommended_strategy(analysis.layers, analysis.virtual_size);
            std::vector<VolumeEstimate> estimates;
            PreparedWorkload shown;
            for (const VolumeAnalysis& volume : analysis.volumes) {
                const VolumeMap& before = volume.map;
                std::cout << "\nRecommended strategy for partition " << before.partition << ": "
                          << strategy_name(options.strategy) << " ("
                          << why(analysis, options.strategy, opts->strategy.has_value()) << ")\n";
                PlanOutcome outcome = [&] {
                    ProgressMeter meter("planning");
                    return plan_and_apply(before, analysis.layers, identify(before, image->path(), image->size()),
                                          options, meter.progress());
                }();
                outcome.plan.summary.free_space_fragmentation_percent_before =
                    volume.free_space.fragmentation_percent;
                outcome.plan.summary.free_space_fragmentation_percent_after =
                    analyze_free_space(outcome.after).fragmentation_percent;
                print_plan_summary(std::cout, outcome.plan, before, opts->image);
                std::cout << "\nImpact of this plan on the storage\n";
                print_impact(std::cout, assess_impact(*image, analysis.table, before, outcome.plan));

                const PreparedWorkload prepared = prepare_workload(workload, kDefaultMaxIo, *image, before);
                shown = prepared;
                VolumeEstimate v;
                v.partition = before.partition;
                v.before = estimate_workload(before, prepared);
                v.after = estimate_workload(outcome.after, prepared);
                estimates.push_back(std::move(v));
            }
            std::cout << '\n';
            print_estimate(std::cout, image->path(), shown, std::string("recommended plan above"), estimates);
        });
    });
}

}  // namespace guestfrag::cli
