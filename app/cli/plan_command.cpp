// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag plan`: make a plan (or check one) for one NTFS volume of an image.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/impact_text.hpp"
#include "app/cli/plan_text.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/size_option.hpp"
#include "app/cli/strategy_option.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag::cli {

namespace {

struct Options {
    std::string image;
    std::optional<int> partition;
    std::string strategy = "defrag";
    std::string order;
    std::string max_growth;
    std::string max_moved;
    std::string granule;
    std::vector<std::string> exclude;
    ImageOptions image_options;
    std::string output;
    bool json = false;
    bool frontier = false;
    std::string check;
};

/// Index of the one volume the command works on: the only NTFS volume analysed (all of
/// them, or the one --partition chose).
std::size_t choose_volume(const ImageAnalysis& analysis, const std::string& image) {
    if (analysis.volumes.size() == 1) return 0;
    std::string numbers;
    for (const VolumeAnalysis& v : analysis.volumes)
        numbers += (numbers.empty() ? "" : ", ") + std::to_string(v.map.partition);
    throw Failure(image, "the disk holds " + std::to_string(analysis.volumes.size()) +
                             " NTFS volumes (partitions " + numbers + "): choose one with --partition",
                  kUsage);
}

void write_plan_file(const std::string& path, const Plan& plan, const VolumeMap& before, const Frontier* frontier) {
    // The reason is the system's (no such directory, permission, no space): what the user
    // has to mend.
    const auto failed = [&path] {
        return Failure(path, std::string("cannot write the plan: ") + std::strerror(errno != 0 ? errno : EIO),
                       kBadInput);
    };
    errno = 0;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out.is_open()) throw failed();
    write_plan_json(out, plan, before, frontier);
    out.close();
    if (!out) throw failed();
}

void run(const Options& opts) {
    // With --check the plan says which partition it is for; read it first.
    std::optional<Plan> checked;
    if (!opts.check.empty()) on_behalf_of(opts.check, [&] { checked = read_plan(opts.check); });
    std::optional<int> partition = opts.partition;
    if (checked && !partition) partition = checked->identity.partition;
    const std::optional<PlacementOrder> order = order_option(opts.order, *parse_strategy(opts.strategy));

    on_behalf_of(opts.image, [&] {
        const OpenedImage opened = open_and_analyze_image(opts.image, opts.image_options, partition);
        const std::size_t volume = choose_volume(*opened.analysis, opts.image);
        const VolumeMap& map = opened.analysis->volumes[volume].map;
        const std::optional<std::uint64_t> granule = size_option(opts.granule);

        PlannedVolume planned;
        PlanOptions options;
        if (checked) {
            on_behalf_of(opts.check, [&] { planned = adopt_plan(opened, volume, std::move(*checked), granule); });
        } else {
            options.strategy = *parse_strategy(opts.strategy);
            options.order = order;
            options.max_growth = size_option(opts.max_growth);
            options.max_moved = size_option(opts.max_moved);
            options.granule = granule.value_or(0);
            options.exclude = opts.exclude;
            options = prepare_plan_options(opened, volume, std::move(options));
            ProgressMeter meter("planning");
            planned = plan_volume(opened, volume, options, meter.progress());
        }
        // What this command prints comes from the plan and its summary: the volume as the
        // plan leaves it, a second map as large as the first, goes before the storage
        // warnings are worked out beside it.
        planned.after.reset();
        const Plan& plan = planned.plan;

        const std::optional<Frontier> frontier =
            opts.frontier && !checked ? std::optional{plan_frontier(map, plan)}
                                      : std::nullopt;
        const Frontier* points = frontier ? &*frontier : nullptr;
        if (!opts.output.empty()) write_plan_file(opts.output, plan, map, points);
        if (opts.json) write_plan_json(std::cout, plan, map, points);
        if (!opts.json) {
            print_plan_summary(std::cout, plan, map, opts.image);
            if (frontier) print_frontier(std::cout, *frontier, map);
            // The same warnings `impact` gives (without its --deep census), so nobody runs a
            // plan without seeing what it costs the storage.
            ImpactOptions impact;
            impact.granule = plan.summary.granule_size;
            std::cout << "\nStorage warnings (details: guestfrag impact IMAGE --plan PLAN.json)\n";
            print_warnings(std::cout, plan_impact(opened, planned, impact).warnings);
            if (!opts.output.empty())
                std::cout << "\nPlan written to " << opts.output << "; carry it out into a new image with\n"
                          << "  guestfrag apply " << opts.image << " --plan " << opts.output << " -o OUT\n";
        }
    });
}

}  // namespace

void add_plan_command(CLI::App& app) {
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("plan", "Plan moves that defragment or pack one NTFS volume (nothing is written)");
    cmd->add_option("IMAGE", opts->image, "Disk image")->required();
    cmd->add_option("--partition", opts->partition, "Partition number (needed when the disk has several NTFS volumes)");
    cmd->add_option("--strategy", opts->strategy, "What the plan does (see Strategies below)")
        ->check(strategy_check())
        ->capture_default_str();
    CLI::Option* order = cmd->add_option("--order", opts->order, kOrderHelp)->check(order_check());
    cmd->add_option("--max-growth", opts->max_growth, "Most the top layer may grow (thin plus clone delta growth)")
        ->check(size_check());
    cmd->add_option("--max-moved", opts->max_moved, "Most data the plan may move")->check(size_check());
    cmd->add_option("--granule", opts->granule,
                    "Allocation granule for growth, reclaimable space and shrink (default: the top layer's)")
        ->check(size_check());
    cmd->add_option("--exclude", opts->exclude, "Never move files whose path matches this glob (repeatable)")
        ->type_name("GLOB");
    add_image_options(*cmd, opts->image_options);
    cmd->add_option("-o,--output", opts->output, "Write the guestfrag.plan.v1 JSON document to this file");
    cmd->add_flag("--json", opts->json, "Print the guestfrag.plan.v1 JSON document instead of the summary");
    CLI::Option* frontier = cmd->add_flag(
        "--frontier", opts->frontier,
        "Also show what the plan's first moves reach at 10 budgets of its moved data, and the knee");
    CLI::Option* check =
        cmd->add_option("--check", opts->check,
                        "Validate this plan against IMAGE (identity and every move) and print its summary");
    cmd->footer(std::string(kStrategyMeanings) + kOrderMeanings +
                "Example:\n  guestfrag plan disk.vmdk --strategy optimize --order path -o plan.json\n");
    // A checked plan is not made again, so it has no frontier: both together would do nothing.
    check->excludes(frontier);
    check->excludes(order);
    cmd->callback([opts] { run(*opts); });
}

}  // namespace guestfrag::cli
