// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag apply IMAGE --plan PLAN -o OUT`: carries a plan out offline into a new sparse raw
// disk or a qcow2 overlay of the input and proves the result (docs/apply.md). The input is
// only read.
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "app/cli/apply_run.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/size_option.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/apply.hpp"

namespace guestfrag::cli {

void add_apply_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::string plan;
        std::string output;
        std::string output_format = "raw";
        std::string rate;
        ImageOptions image_options;
        bool no_verify = false;
        bool allow_vss = false;
        bool json = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "apply", "Carry a plan out offline into a new disk or a qcow2 overlay (the input is only read) and verify it");
    cmd->add_option("IMAGE", opts->image, "Disk image the plan was made for")->required();
    cmd->add_option("--plan", opts->plan, "guestfrag.plan.v1 file to carry out")->required();
    cmd->add_option("-o,--output", opts->output, "New disk to write (replaced only when verified)")->required();
    add_output_format_option(*cmd, opts->output_format);
    cmd->add_option("--rate", opts->rate, "Most data copied per second, e.g. 50MiB/s")->check(rate_check());
    add_image_options(*cmd, opts->image_options);
    cmd->add_flag("--no-verify", opts->no_verify, "Skip the checks after the moves");
    cmd->add_flag("--allow-vss", opts->allow_vss,
                  "Apply even though shadow copies exist (an offline move bypasses their copy-on-write)");
    cmd->add_flag("--json", opts->json, "Print the guestfrag.apply.v1 JSON document");

    cmd->footer(
        "Example:\n  guestfrag apply disk.qcow2 --plan plan.json -o moved.qcow2 --output-format qcow2\n");
    cmd->callback([opts] {
        // Read beside the input's analysis (PendingPlan), its errors still on its own behalf.
        PendingPlan plan([path = opts->plan](const std::function<void(int)>& partition_read) {
            Plan read;
            on_behalf_of(path, [&] { read = read_plan(path, kPlanPipeTimeout, partition_read); });
            return read;
        });
        ApplyOptions options;
        options.output = opts->output;
        options.verify = !opts->no_verify;
        options.allow_vss = opts->allow_vss;
        options.format = output_format(opts->output_format);
        RateLimiter limiter(rate_option(opts->rate));
        options.limiter = &limiter;
        const ApplyResult result = run_apply(opts->image, opts->image_options, plan, options);
        if (opts->json)
            std::cout << apply_json(result).dump(2) << '\n';
        else
            print_apply(std::cout, result);
    });
}

}  // namespace guestfrag::cli
