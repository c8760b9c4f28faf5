// SPDX-License-Identifier: GPL-2.0-or-later
#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/analysis_json.hpp"
#include "app/cli/analysis_text.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/provisioning_options.hpp"
#include "app/cli/size_option.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

void add_analyze_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::optional<int> partition;
        bool json = false;
        bool files = false;
        std::size_t top = 10;
        std::vector<std::string> transfer_sizes = {"1M", "4M", "8M", "16M"};
        bool vmfs5_thin = false;
        ImageOptions image_options;
        ProvisioningOptions provisioning;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("analyze", "Measure file and free-space fragmentation of every NTFS volume");
    cmd->add_option("IMAGE", opts->image, "Disk image: raw/flat, VMDK, VHD, VHDX or qcow2 (with its parents), partitioned or a bare NTFS volume")->required();
    cmd->add_option("--partition", opts->partition, "Analyse only this partition number");
    cmd->add_flag("--json", opts->json, "Print the guestfrag.analysis.v1 JSON document");
    cmd->add_flag("--files", opts->files,
                  "List every stream with its extents (JSON) or every fragmented file (text)");
    add_image_options(*cmd, opts->image_options);
    add_provisioning_options(*cmd, opts->provisioning);
    cmd->add_option("--top", opts->top, "Most fragmented files to list in the text report")->capture_default_str();
    cmd->add_option("--transfer-size", opts->transfer_sizes,
                    "Array-offload transfer sizes of the copy figures, comma-separated (at most 16M)")
        ->delimiter(',')
        ->check(size_check())
        ->capture_default_str();
    cmd->add_flag("--vmfs5-thin", opts->vmfs5_thin,
                  "Cap offload commands at 1 MiB, as VMFS5 did for thin disks");
    cmd->callback([opts] {
        on_behalf_of(opts->image, [&] {
            CopyOptions copy;
            copy.transfer_sizes.clear();
            for (const std::string& t : opts->transfer_sizes) copy.transfer_sizes.push_back(*parse_size(t));
            copy.vmfs5_thin = opts->vmfs5_thin;
            const OpenedImage opened =
                open_and_analyze_image(opts->image, opts->image_options, opts->partition, copy);
            const std::vector<LayerProvisioning> provisioning =
                layer_provisioning(opened.image->layers(), opts->provisioning);
            if (opts->json)
                std::cout << analysis_to_json(*opened.analysis, opts->files, provisioning).dump(2) << '\n';
            else
                print_analysis(std::cout, *opened.analysis, opts->top, opts->files, provisioning);
        });
    });
}

}  // namespace guestfrag::cli
