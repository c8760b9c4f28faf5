// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag impact IMAGE --plan PLAN.json`: what the plan would do to the storage under
// the guest (docs/design.md §5; formulas in docs/impact.md). Reads the image, never writes it.
#include <bit>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "app/cli/commands.hpp"
#include "app/cli/copy_options.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/impact_json.hpp"
#include "app/cli/impact_text.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/provisioning_options.hpp"
#include "app/cli/size_option.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

struct Options {
    std::string image;
    std::string plan;
    std::vector<std::string> dedup_chunks = {"4K", "8K", "16K", "32K"};
    std::string snapshot_granule;
    std::string granule;
    std::string read_rate;
    ImageOptions image_options;
    CopyOptionTexts copy;
    ProvisioningOptions provisioning;
    DeviceOptions device;
    bool deep = false;
    bool json = false;
};

CLI::Validator chunk_check() {
    return CLI::Validator(
        [](const std::string& text) {
            const auto size = parse_size(text);
            if (!size || *size < 512 || *size > (std::uint64_t{64} << 20) || !std::has_single_bit(*size))
                return "'" + text + "' is not a chunk size (a power of two from 512 to 64MiB)";
            return std::string();
        },
        "SIZE");
}

void run(const Options& opts) {
    ImpactOptions options;
    options.models = device_models(opts.device);  // a usage error goes before any reading
    Plan plan;
    on_behalf_of(opts.plan, [&] { plan = read_plan(opts.plan); });
    options.dedup_chunks.clear();
    for (const std::string& c : opts.dedup_chunks) options.dedup_chunks.push_back(*parse_size(c));
    options.snapshot_granularity = size_option(opts.snapshot_granule);
    options.granule = size_option(opts.granule).value_or(plan.summary.granule_size);
    options.deep = opts.deep;
    options.read_rate = rate_option(opts.read_rate);

    on_behalf_of(opts.image, [&] {
        const OpenedImage opened = open_and_analyze_image(opts.image, opts.image_options, plan.identity.partition);
        // The plan's writes go to the top layer, as estimate's do (docs/impact.md §10).
        options.provisioning = layer_provisioning(opened.image->layers(), opts.provisioning).front();
        // A plan made for another or a changed volume is the plan's fault; once it is known
        // to fit, what fails (--deep reads the whole disk) is the image's.
        PlannedVolume planned;
        // Moved, not copied: a million moves are 63 MB.
        on_behalf_of(opts.plan, [&] { planned = adopt_plan(opened, 0, std::move(plan), options.granule); });
        // The meter is gone (its line erased) before the report is printed.
        const Impact impact = [&] {
            ProgressMeter meter("hashing chunks");
            return plan_impact(opened, planned, options, meter.progress());
        }();
        const CopyStates copy = plan_copy_states(opened, planned, copy_options(opts.copy));
        if (opts.json) {
            std::cout << impact_to_json(impact, copy, opened.image->path(), opts.plan).dump(2) << '\n';
            return;
        }
        std::cout << "Impact of " << opts.plan << " (" << planned.plan.strategy << ", " << planned.plan.moves.size()
                  << " moves) on partition " << impact.partition << " of " << opened.image->path() << "\n\n";
        print_impact(std::cout, impact, copy);
    });
}

}  // namespace

void add_impact_command(CLI::App& app) {
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "impact", "What a plan would do to thin disks, clones, snapshots, dedup and VSS (nothing is written)");
    cmd->add_option("IMAGE", opts->image, "Disk image")->required();
    cmd->add_option("--plan", opts->plan, "guestfrag.plan.v1 file made for IMAGE")->required();
    cmd->add_option("--dedup-chunk", opts->dedup_chunks, "Dedup chunk sizes, comma-separated")
        ->delimiter(',')
        ->check(chunk_check())
        ->capture_default_str();
    cmd->add_flag("--deep", opts->deep, "Hash every chunk of the disk before and after (reads the whole disk)");
    cmd->add_option("--read-rate", opts->read_rate, "Most the --deep pass reads per second (e.g. 50MiB/s)")
        ->check(rate_check());
    cmd->add_option("--snapshot-granule", opts->snapshot_granule,
                    "Also report the snapshot/replication delta at this granularity")
        ->check(size_check());
    cmd->add_option("--granule", opts->granule,
                    "Granule of growth and reclaimable figures (default: the plan's)")
        ->check(size_check());
    add_image_options(*cmd, opts->image_options);
    add_copy_options(*cmd, opts->copy);
    add_provisioning_options(*cmd, opts->provisioning);
    add_device_options(*cmd, opts->device);
    cmd->add_flag("--json", opts->json, "Print the guestfrag.impact.v1 JSON document");
    cmd->footer("Example:\n  guestfrag impact disk.qcow2 --plan plan.json --deep\n");
    cmd->callback([opts] { run(*opts); });
}

}  // namespace guestfrag::cli
