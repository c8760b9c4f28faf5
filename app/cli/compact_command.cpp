// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag compact IMAGE -o OUT`: a new image holding only what NTFS uses, its data packed
// into the fewest granules first (docs/compact.md). The input is only read.
#include <iostream>
#include <memory>
#include <string>

#include "app/cli/commands.hpp"
#include "app/cli/compact_run.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/size_option.hpp"
#include "core/io/rate_limiter.hpp"
#include "pipeline/compact.hpp"

namespace guestfrag::cli {

void add_compact_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::string output;
        NewDiskOptions disk;
        std::string rate;
        ImageOptions image_options;
        bool json = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("compact",
                                       "Write a new image holding only what NTFS uses, packed into the "
                                       "fewest granules (the input is only read)");
    cmd->add_option("IMAGE", opts->image, "Disk image to compact")->required();
    cmd->add_option("-o,--output", opts->output, "New image to write (replaced only when verified)")
        ->required();
    cmd->add_option("--output-format", opts->disk.output_format,
                    "raw (sparse), or qcow2, vmdk or vhdx (converted by qemu-img from the verified raw disk)")
        ->check(CLI::IsMember({"raw", "qcow2", "vmdk", "vhdx"}))
        ->capture_default_str();
    cmd->add_option("--granule", opts->disk.granule,
                    "Host block to pack into (default: raw 1MiB, qcow2 64KiB, vmdk 64KiB, vhdx 1MiB)")
        ->check(size_check());
    cmd->add_flag("--pack,!--no-pack", opts->disk.pack,
                  "Move data into the fewest granules first (the default)");
    cmd->add_option("--rate", opts->rate, "Most data copied per second, e.g. 50MiB/s")->check(rate_check());
    add_image_options(*cmd, opts->image_options);
    cmd->add_flag("--no-verify", opts->disk.no_verify, "Skip the checks");
    cmd->add_flag("--allow-vss", opts->disk.allow_vss,
                  "Compact even though shadow copies exist (an offline move bypasses their copy-on-write)");
    cmd->add_flag("--json", opts->json, "Print the guestfrag.compact.v1 JSON document");

    cmd->footer("Example:\n  guestfrag compact disk.vmdk -o small.vmdk --output-format vmdk\n");
    cmd->callback([opts] {
        CompactOptions options;
        on_behalf_of(opts->image, [&] { options = compact_options(opts->output, opts->disk); });
        RateLimiter limiter(rate_option(opts->rate));
        options.limiter = &limiter;
        const CompactResult result = run_compact(opts->image, opts->image_options, options);
        if (opts->json)
            std::cout << compact_json(result).dump(2) << '\n';
        else
            print_compact(std::cout, opts->image, result);
    });
}

}  // namespace guestfrag::cli
