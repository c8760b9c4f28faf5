// SPDX-License-Identifier: GPL-2.0-or-later
#include <iostream>
#include <memory>
#include <optional>

#include "app/cli/analysis_json.hpp"
#include "app/cli/analysis_text.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/copy_options.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/provisioning_options.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag::cli {

void add_analyze_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::optional<int> partition;
        bool json = false;
        bool files = false;
        std::size_t top = 10;
        CopyOptionTexts copy;
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
    add_copy_options(*cmd, opts->copy);
    cmd->callback([opts] {
        on_behalf_of(opts->image, [&] {
            const OpenedImage opened = open_and_analyze_image(opts->image, opts->image_options,
                                                              opts->partition, copy_options(opts->copy));
            const std::vector<LayerProvisioning> provisioning =
                layer_provisioning(opened.image->layers(), opts->provisioning);
            if (opts->json)
                write_analysis_json(std::cout, *opened.analysis, opts->files, provisioning);
            else
                print_analysis(std::cout, *opened.analysis, opts->top, opts->files, provisioning);
        });
    });
}

}  // namespace guestfrag::cli
