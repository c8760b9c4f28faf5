// SPDX-License-Identifier: GPL-2.0-or-later
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "app/cli/analysis_json.hpp"
#include "app/cli/analysis_text.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/copy_options.hpp"
#include "app/cli/dedup_option.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/provisioning_options.hpp"
#include "app/cli/verdict_text.hpp"
#include "core/error.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag::cli {

void add_analyze_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::optional<int> partition;
        bool json = false;
        bool files = false;
        bool check = false;
        bool no_verdict = false;
        std::size_t top = 10;
        std::string dedup_chunk;
        CopyOptionTexts copy;
        ImageOptions image_options;
        ProvisioningOptions provisioning;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("analyze", "Measure file and free-space fragmentation of every NTFS volume");
    cmd->add_option("IMAGE", opts->image, "Disk image: raw/flat, VMDK, VHD, VHDX or qcow2 (with its parents), partitioned or a bare NTFS volume")->required();
    cmd->add_option("--partition", opts->partition, "Analyse only this partition number");
    cmd->add_flag("--json", opts->json,
                  "Print the guestfrag.analysis.v1 JSON document (with each volume's verdict)");
    cmd->add_flag("--files", opts->files,
                  "List every stream with its extents (JSON) or every fragmented file (text)");
    add_image_options(*cmd, opts->image_options);
    add_provisioning_options(*cmd, opts->provisioning);
    cmd->add_option("--top", opts->top, "Most fragmented files to list in the text report")->capture_default_str();
    add_copy_options(*cmd, opts->copy);
    add_dedup_chunk_option(*cmd, opts->dedup_chunk);
    cmd->add_flag(
           "--check", opts->check,
           "Print only the verdict (report's first screen) and exit 0 when nothing is worth doing, 5 when "
           "a plan is and can run offline now, 6 when one is but an offline run is blocked")
        ->excludes("--json")
        ->excludes("--files");
    cmd->add_flag(
           "--no-verdict", opts->no_verdict,
           "Leave the verdict out of the report and the JSON: no plans are made or weighed, which takes "
           "about as long again as the analysis")
        ->excludes("--check");
    cmd->footer("Examples:\n  guestfrag analyze disk.vmdk\n  guestfrag analyze disk.vmdk --check\n");
    cmd->callback([opts] {
        int found = kOk;
        const std::optional<std::uint64_t> dedup_chunk = dedup_chunk_option(opts->dedup_chunk);
        on_behalf_of(opts->image, [&] {
            const OpenedImage opened = open_and_analyze_image(opts->image, opts->image_options,
                                                              opts->partition, copy_options(opts->copy));
            const std::vector<LayerProvisioning> provisioning =
                layer_provisioning(opened.image->layers(), opts->provisioning);
            // The answer first, as report gives it: scan on the array model, every strategy
            // weighed.
            std::vector<VolumeVerdict> verdicts;
            if (!opts->no_verdict) {
                VerdictOptions rule;
                rule.provisioning = provisioning.front();
                rule.dedup_chunk = dedup_chunk;
                for (std::size_t volume = 0; volume < opened.analysis->volumes.size(); ++volume) {
                    verdicts.push_back(decide_volume(opened, volume, rule));
                    // Only --check, which is about the verdict, fails on a volume without one.
                    if (opts->check && verdicts.back().error) throw *verdicts.back().error;
                }
            }
            if (opts->json) {
                write_analysis_json(std::cout, *opened.analysis, opts->files, provisioning, verdicts);
                return;
            }
            for (std::size_t volume = 0; volume < verdicts.size(); ++volume) {
                if (volume > 0) std::cout << '\n';
                print_verdict(std::cout, *opened.analysis, volume, verdicts[volume], opts->image);
                if (opts->check) found = std::max(found, check_status(*verdicts[volume].verdict));
            }
            if (opts->check) return;
            if (!verdicts.empty()) std::cout << '\n';
            print_analysis(std::cout, *opened.analysis, opts->top, opts->files, provisioning);
        });
        if (found != kOk) throw Finding{found};
    });
}

}  // namespace guestfrag::cli
