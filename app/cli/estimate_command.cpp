// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag estimate IMAGE`: replays a workload on every NTFS volume (and, with --plan, on
// the volume as the plan would leave it) and reports IO counts, vscsiStats histograms and
// device time estimates (docs/design.md §4; docs/estimate.md).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/analysis_json.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/estimate_text.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/guest_option.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/io_stats_json.hpp"
#include "app/cli/provisioning_options.hpp"
#include "app/cli/strategy_option.hpp"
#include "core/estimate/device_model_json.hpp"
#include "core/estimate/estimate.hpp"
#include "core/estimate/stream_ios.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

using Json = nlohmann::ordered_json;

// ---- JSON (guestfrag.estimate.v1, docs/design.md §4 contract) ----

Json stats_json(const WorkloadEstimate& e) {
    Json r = io_stats_json(e.stats);
    r["writes"] = e.stats.writes;
    r["written_bytes"] = e.stats.written_bytes;
    r["zero_block"] = e.stats.zero_block;
    r["first_writes"] = e.stats.first_writes;
    r["provisioned"] = provisioned_json(e.stats);
    if (e.write)
        r["write"] = {{"files", e.write->files},
                      {"files_written", e.write->files_written},
                      {"bytes_written", e.write->bytes_written},
                      {"fragments", e.write->fragments},
                      {"fragmented_files", e.write->fragmented_files}};
    return r;
}

Json estimate_json(const PreparedWorkload& w, const std::vector<VolumeEstimate>& volumes,
                   const DeviceModels& models, const DeviceOptions& device) {
    Json doc;
    doc["schema"] = "guestfrag.estimate.v1";
    doc["workload"] = w.workload.text();
    doc["max_io"] = w.max_io;
    doc["guest"] = {{"profile", std::string(w.guest.name)},
                    {"read_ahead", w.guest.read_ahead_bytes},
                    {"reader", nullptr}};
    if (!w.guest.reader.name.empty()) doc["guest"]["reader"] = std::string(w.guest.reader.name);
    doc["preset"] = device.preset;
    if (!device.model_file.empty()) doc["device_model"] = device.model_file;
    doc["device_models"] = device_models_json(models);
    doc["volumes"] = Json::array();
    for (const VolumeEstimate& v : volumes) {
        Json j;
        j["partition"] = v.partition;
        if (v.no_volume) j["no_volume"] = true;
        j["provisioning"] = provisioning_json(v.provisioning);
        if (v.before.trace) {
            // The trace's files are the same before and after a plan (plans only move data).
            const TraceOutcome& t = *v.before.trace;
            j["trace"] = {{"paths", t.paths},
                          {"read", t.read},
                          {"without_data", t.without_data},
                          {"missing", t.missing},
                          {"missing_paths", t.missing_paths}};
        }
        j["before"] = stats_json(v.before);
        if (v.traced) j["traced"] = io_stats_json(*v.traced);
        if (v.after) j["after"] = stats_json(*v.after);
        doc["volumes"].push_back(std::move(j));
    }
    return doc;
}

// ---- option checks (usage errors, exit 1) ----

CLI::Validator max_io_validator() {
    return CLI::Validator(
        [](const std::string& text) {
            const auto size = parse_size(text);
            if (!size) return "'" + text + "' is not a size (e.g. 4096, 64K, 1MiB)";
            if (!valid_max_io(*size)) return "'" + text + "' is not a positive multiple of 512 bytes";
            return std::string();
        },
        "SIZE");
}

}  // namespace

void add_estimate_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::optional<std::string> plan;
        std::string workload = "scan";
        std::string max_io = "1MiB";
        std::optional<int> partition;
        ImageOptions image_options;
        ProvisioningOptions provisioning;
        DeviceOptions device;
        GuestOptions guest;
        bool json = false;
        std::optional<std::string> compare;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "estimate",
        "Estimate the IO a workload issues, and its time on HDD, SSD and array, before and after a plan");
    cmd->add_option("IMAGE", opts->image,
                    "Disk image (raw/flat disk, container format, or a bare NTFS volume)")
        ->required();
    cmd->add_option("--plan", opts->plan,
                    "guestfrag.plan.v1 file: also estimate the volume as the plan leaves it");
    cmd->add_option("--workload", opts->workload,
                    "What the guest does (see Workloads below); install: takes writers=W (default 4) and "
                    "chunk=SIZE (default 64k)")
        ->check(workload_check())
        ->capture_default_str();
    cmd->add_option("--max-io", opts->max_io, "Largest IO (a multiple of 512 bytes)")
        ->check(max_io_validator())
        ->capture_default_str();
    add_guest_options(*cmd, opts->guest);
    cmd->add_option("--partition", opts->partition, "Estimate only this partition number");
    add_image_options(*cmd, opts->image_options);
    add_provisioning_options(*cmd, opts->provisioning);
    add_device_options(*cmd, opts->device);
    cmd->add_flag("--json", opts->json, "Print the guestfrag.estimate.v1 JSON document");
    cmd->add_option("--compare", opts->compare,
                    "A real trace of the guest's IOs (nbdkit log, blkparse output, vscsiStats CSV): printed "
                    "beside the estimate before the plan");

    cmd->footer(std::string(kWorkloadMeanings) + kGuestMeanings +
                "Example:\n  guestfrag estimate disk.img --plan plan.json --workload scan:path\n");
    cmd->callback([opts] {
        // The validators above accepted these texts.
        const Workload workload = parse_workload(opts->workload);
        const IoShape shape{*parse_size(opts->max_io), guest_option(opts->guest)};
        const DeviceModels models = device_models(opts->device);  // a usage error goes before any reading

        std::optional<Plan> plan;
        std::optional<int> partition = opts->partition;
        if (opts->plan) {
            on_behalf_of(*opts->plan, [&] { plan = read_plan(*opts->plan); });
            if (partition && *partition != plan->identity.partition)
                throw Failure(*opts->plan,
                              "the plan is for partition " + std::to_string(plan->identity.partition) +
                                  ", not partition " + std::to_string(*partition),
                              kBadInput);
            partition = plan->identity.partition;
        }

        std::vector<VolumeEstimate> volumes;
        PreparedWorkload shown;  // the workload as reported (same text and max_io for every volume)
        shown.workload = workload;
        shown.max_io = shape.max_io;
        shown.guest = shape.guest;
        // A fio job on the disk needs no file system: a disk without an NTFS volume (a new thin
        // disk, no partition table, another file system) is estimated whole.
        const bool disk_job =
            workload.kind == Workload::Kind::Fio && workload.fio.target == FioJob::Target::Disk && !plan && !partition;
        on_behalf_of(opts->image, [&] {
            const OpenedImage opened = disk_job ? open_and_analyze_if_any(opts->image, opts->image_options)
                                                : open_and_analyze_image(opts->image, opts->image_options, partition);
            // Writes go to the top layer: its provisioning decides the first writes.
            const LayerProvisioning top =
                layer_provisioning(opened.image->layers(), opts->provisioning).front();
            if (!opened.analysis) {
                try {
                    (void)check_fio_target(workload.fio, opened.image->size());
                } catch (const Error& e) {
                    throw Failure(opts->image, e.what(), kUsage);
                }
                volumes.push_back(estimate_disk(*opened.image, workload, shape, models, top));
            } else if (workload.kind == Workload::Kind::Fio)
                // A job that does not fit its target is a bad option (exit 1), like a malformed one.
                for (const VolumeAnalysis& v : opened.analysis->volumes) try {
                        (void)check_fio_target(workload.fio,
                                               fio_target_bytes(workload.fio, opened.image->size(), v.map));
                    } catch (const Error& e) {
                        throw Failure(opts->image, e.what(), kUsage);
                    }
            if (workload.kind == Workload::Kind::Install)
                // Too many writes for the files is a bad chunk (exit 1); a volume without
                // files to take sizes from is refused as for write:N (exit 2).
                for (const VolumeAnalysis& v : opened.analysis->volumes) {
                    const std::vector<std::uint64_t> sizes = write_file_sizes(v.map, workload.files);
                    try {
                        check_install_writes(workload.install, sizes);
                    } catch (const Error& e) {
                        throw Failure(opts->image, e.what(), kUsage);
                    }
                }
            const std::size_t count = opened.analysis ? opened.analysis->volumes.size() : 0;
            for (std::size_t volume = 0; volume < count; ++volume) {
                std::optional<PlannedVolume> planned;
                // A plan's analysis holds its partition alone, so the plan is moved into the
                // one volume, not copied (a million moves are 63 MB).
                if (plan) on_behalf_of(*opts->plan, [&] { planned = adopt_plan(opened, volume, std::move(*plan)); });
                // Trace errors name their source in the message; the subject stays the image.
                volumes.push_back(estimate_volume(opened, volume, workload, shape,
                                                  planned ? &*planned : nullptr, models, {}, top));
                if (opts->compare)
                    volumes.back().traced = traced_stats(opened, volume, *opts->compare, models);
            }
            if (opts->json)
                std::cout << estimate_json(shown, volumes, models, opts->device).dump(2) << '\n';
            else
                print_estimate(std::cout, opened.image->path(), shown, opts->plan, volumes);
        });
    });
}

}  // namespace guestfrag::cli
