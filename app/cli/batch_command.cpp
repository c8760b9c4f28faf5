// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag batch`: analyse (and optionally plan) many images with several workers under
// one read-rate budget, recording every result in an SQLite database (docs/batch.md).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/batch/batch.hpp"
#include "app/batch/database.hpp"
#include "app/batch/image_list.hpp"
#include "app/cli/apply_run.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/compact_run.hpp"
#include "app/cli/dedup_option.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/provisioning_options.hpp"
#include "app/cli/size_option.hpp"
#include "app/cli/stop_on_signal.hpp"
#include "app/cli/strategy_option.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

using batch::BatchEvent;
using batch::ImageResult;
using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

struct Options {
    std::vector<std::string> images;
    std::optional<std::string> list;
    std::string db = "guestfrag.sqlite";
    unsigned jobs = 2;
    std::string read_rate;
    unsigned per_datastore = 0;
    bool plan = false;
    bool verdict = false;
    std::string dedup_chunk;
    std::optional<std::string> strategy;
    std::string order;
    bool force = false;
    std::string shard;
    bool json = false;
    std::optional<std::string> apply_to;
    std::optional<std::string> compact_to;
    NewDiskOptions disk;
    DeviceOptions device;
};

Json apply_event_json(const batch::ApplyRecord& a) {
    Json j = {{"output", a.output}, {"output_format", a.output_format}, {"partition", nullptr}};
    if (a.partition) j["partition"] = *a.partition;
    if (!a.ok) {
        j["status"] = "failed";
        j["error"] = a.error;
        return j;
    }
    j["status"] = "ok";
    j["moves"] = {{"planned", a.moves_planned}, {"done", a.moves_done}, {"skipped", a.moves_skipped()}};
    j["skipped_by_reason"] = a.skipped_by_reason;
    j["bytes_written"] = {{"disk", a.disk_bytes_written}, {"moved", a.bytes_moved}, {"file", a.output_file_bytes}};
    if (const auto& v = a.verification)
        j["verification"] = {{"passed", true},
                             {"streams_hashed", v->streams_hashed},
                             {"fragments_before", v->fragments_before},
                             {"fragments_predicted", v->fragments_predicted},
                             {"fragments_after", v->fragments_after}};
    else
        j["verification"] = nullptr;
    j["seconds"] = a.seconds;
    return j;
}

Json compact_event_json(const batch::CompactRecord& c) {
    Json j = {{"output", c.output}, {"output_format", c.output_format}};
    if (!c.ok) {
        j["status"] = "failed";
        j["error"] = c.error;
        return j;
    }
    j["status"] = "ok";
    j["granule_bytes"] = c.granule;
    j["packed"] = c.packed;
    j["volumes"] = c.volumes;
    j["moves"] = {{"planned", c.moves_planned}, {"done", c.moves_done}, {"skipped", c.moves_skipped}};
    j["bytes_moved"] = c.bytes_moved;
    j["granules"] = {{"input", c.granules_input},
                     {"sparsified", c.granules_sparsified},
                     {"packed", c.granules_packed},
                     {"output", c.granules_output}};
    j["host_bytes"] = {{"input", c.host_bytes_input}, {"output", c.host_bytes_output}};
    j["data_bytes_output"] = c.data_bytes_output;
    j["output_file_bytes"] = c.output_file_bytes;
    j["verification"] =
        c.verified ? Json{{"passed", true}, {"streams_hashed", c.streams_hashed}} : Json(nullptr);
    j["seconds"] = c.seconds;
    return j;
}

Json event_json(const BatchEvent& e) {
    if (e.kind == BatchEvent::Kind::Skipped) return {{"path", e.path}, {"status", "skipped"}};
    if (e.kind == BatchEvent::Kind::Busy) return {{"path", e.path}, {"status", "busy"}, {"run", e.holder != 0 ? nlohmann::ordered_json(e.holder) : nullptr}};
    const ImageResult& r = *e.result;
    if (!r.ok) {
        Json j = {{"path", r.path}, {"status", "failed"}, {"error", r.error}, {"seconds", r.seconds}};
        if (r.apply) j["apply"] = apply_event_json(*r.apply);
        if (r.compact) j["compact"] = compact_event_json(*r.compact);
        return j;
    }
    Json volumes = Json::array();
    for (const batch::VolumeResult& v : r.volumes) {
        Json j = {{"partition", v.partition},
                  {"files", v.files.files},
                  {"fragmented_files", v.files.fragmented_files},
                  {"fragmentation_percent", v.files.fragmentation_percent},
                  {"free_space_fragmentation_percent", v.free_space.fragmentation_percent},
                  {"reclaimable_bytes", v.reclaimable_bytes}};
        if (v.plan) {
            const PlanSummary& s = v.plan->summary;
            j["plan"] = {{"strategy", v.plan->strategy},
                         {"moves", s.moves},
                         {"moved_bytes", s.moved_bytes},
                         {"fragments_before", s.fragments_before},
                         {"fragments_after", s.fragments_after},
                         {"thin_growth_bytes", s.thin_growth_bytes},
                         {"clone_delta_growth_bytes", s.clone_delta_growth_bytes},
                         {"ios", v.plan->ios},
                         {"first_writes", v.plan->first_writes},
                         {"device_seconds",
                          {{"hdd", v.plan->seconds.hdd}, {"ssd", v.plan->seconds.ssd}, {"array", v.plan->seconds.array}}}};
            Json warnings = Json::array();
            for (const ImpactWarning& w : v.warnings) warnings.push_back(w.code);
            j["warnings"] = std::move(warnings);
        }
        if (const auto& d = v.verdict) {
            const bool chosen = !d->strategy.empty();
            j["verdict"] = {{"device", d->device},
                            {"workload", d->workload},
                            {"now_seconds", d->now_seconds},
                            {"strategy", chosen ? Json(d->strategy) : Json(nullptr)},
                            {"order", d->order.empty() ? Json(nullptr) : Json(d->order)},
                            {"seconds_saved", d->saved_seconds},
                            {"plan_io_seconds", d->plan_io_seconds},
                            {"storage_work_seconds", d->work_seconds},
                            {"growth_bytes", d->growth_bytes},
                            {"moved_bytes", d->moved_bytes},
                            {"reason", d->reason},
                            {"blockers", d->blockers}};
        }
        volumes.push_back(std::move(j));
    }
    Json j = {{"path", r.path},           {"status", "ok"},         {"format", r.format},
              {"virtual_size", r.virtual_size}, {"volumes", std::move(volumes)}, {"bytes_read", r.bytes_read},
              {"seconds", r.seconds}};
    if (r.apply) j["apply"] = apply_event_json(*r.apply);
    if (r.compact) j["compact"] = compact_event_json(*r.compact);
    return j;
}

std::string event_text(const BatchEvent& e) {
    std::ostringstream out;
    out << '[' << e.finished << '/' << e.total << "] ";
    if (e.kind == BatchEvent::Kind::Skipped) {
        out << "skipped " << e.path << " (unchanged since it was analysed)";
    } else if (e.kind == BatchEvent::Kind::Busy) {
        out << "busy    " << e.path;
        if (e.holder != 0)
            out << " (being analysed by run " << e.holder << ", which is still running)";
        else
            out << " (another batch is claiming it at this moment)";
    } else if (!e.result->ok) {
        out << "failed  " << e.path << ": " << e.result->error;
    } else {
        out << "ok      " << e.path << " (" << e.result->format;
        for (const batch::VolumeResult& v : e.result->volumes)
            out << "; partition " << v.partition << ": " << fixed(v.files.fragmentation_percent, 1) << " % fragmented"
                << (v.plan ? ", plan " + v.plan->strategy + " " + format_size(v.plan->summary.moved_bytes) : "");
        if (const auto& a = e.result->apply) {
            out << "; applied " << a->moves_done << " of " << a->moves_planned << " moves into " << a->output;
            if (a->moves_skipped() != 0) out << " (" << a->moves_skipped() << " skipped)";
            out << (a->verification ? ", verified" : ", not verified");
        }
        if (const auto& c = e.result->compact)
            out << "; compacted into " << c->output << ": host bytes " << format_size(c->host_bytes_input)
                << " -> " << format_size(c->host_bytes_output) << ", " << c->granules_output
                << " granules of " << format_size(c->granule)
                << (c->verified ? ", verified" : ", not verified");
        out << ')';
    }
    return out.str();
}

/// The command line as stored in the runs table.
std::string describe(const Options& o, std::size_t images) {
    std::ostringstream out;
    out << "batch " << images << " images --jobs " << o.jobs;
    if (!o.read_rate.empty()) out << " --read-rate " << o.read_rate;
    if (o.per_datastore) out << " --per-datastore " << o.per_datastore;
    if (o.plan) out << " --plan" << (o.strategy ? " --strategy " + *o.strategy : "");
    if (!o.order.empty()) out << " --order " << o.order;
    if (o.device.preset != DeviceOptions{}.preset) out << " --preset " << o.device.preset;
    if (!o.device.model_file.empty()) out << " --device-model " << o.device.model_file;
    if (o.force) out << " --force";
    if (!o.shard.empty()) out << " --shard " << o.shard;
    if (o.apply_to) out << " --apply-to " << *o.apply_to << " --output-format " << o.disk.output_format;
    if (o.compact_to) {
        out << " --compact-to " << *o.compact_to << " --output-format " << o.disk.output_format;
        if (!o.disk.granule.empty()) out << " --granule " << o.disk.granule;
        if (!o.disk.pack) out << " --no-pack";
    }
    if (o.disk.no_verify) out << " --no-verify";
    if (o.disk.allow_vss) out << " --allow-vss";
    return out.str();
}

/// Creates `dir`, where the batch writes each image's new disk, leaves its files out of
/// `images` (a directory scan would take them) and returns its absolute path. Outputs are
/// named over the whole list, before sharding, so that every shard names an image alike.
std::string output_directory(std::vector<std::string>& images, const std::string& dir,
                             const std::string& what) {
    std::erase_if(images, [&](const std::string& p) { return batch::is_inside(p, dir); });
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir, ec))
        throw Failure(dir, "cannot create the directory for the " + what + " disks", kBadInput);
    return fs::absolute(dir).lexically_normal().string();
}

void run(const Options& opts) {
    std::vector<std::string> images;
    on_behalf_of(opts.list.value_or("batch"), [&] { images = batch::expand_images(opts.images, opts.list); });
    check_new_disk_options(opts.disk, opts.apply_to.has_value(), opts.compact_to.has_value());
    batch::BatchOptions options;
    const NewDiskOptions& disk = opts.disk;
    if (opts.apply_to) {
        options.job.apply = batch::JobOptions::Apply{
            batch::output_paths(images, output_directory(images, *opts.apply_to, "applied"),
                                disk.output_format),
            output_format(disk.output_format), !disk.no_verify, disk.allow_vss};
    } else if (opts.compact_to) {
        CompactOptions compact;
        on_behalf_of("batch", [&] { compact = compact_options({}, disk); });
        options.job.compact = batch::JobOptions::Compact{
            batch::output_paths(images, output_directory(images, *opts.compact_to, "compacted"),
                                disk.output_format),
            compact};
    }
    std::optional<batch::Shard> shard;
    if (!opts.shard.empty()) {
        shard = batch::parse_shard(opts.shard);
        std::erase_if(images, [&](const std::string& p) { return !batch::in_shard(p, *shard); });
    }
    if (images.empty() && !shard) throw Failure("batch", "no images given (IMAGE..., a directory or --list FILE)", kUsage);

    options.jobs = opts.jobs;
    options.read_rate = rate_option(opts.read_rate);
    options.per_datastore = opts.per_datastore;
    options.force = opts.force;
    options.job.plan = opts.plan || opts.strategy.has_value() || opts.apply_to.has_value();
    if (opts.strategy) options.job.strategy = parse_strategy(*opts.strategy);
    // An order the chosen strategy cannot take is refused here; with the recommended
    // strategy it applies to the images planned with defrag (thick disks).
    options.job.order = order_option(opts.order, options.job.strategy.value_or(Strategy::Defrag));
    // The device models time the plan's own IO: naming them asks for plans.
    const bool device_given = opts.device.preset != DeviceOptions{}.preset || !opts.device.model_file.empty();
    options.job.plan = options.job.plan || options.job.order.has_value() || device_given;
    options.job.models = device_models(opts.device);
    // Naming the storage's deduplication asks for the verdict it weighs into.
    options.job.dedup_chunk = dedup_chunk_option(opts.dedup_chunk);
    options.job.verdict = opts.verdict || options.job.dedup_chunk.has_value();

    const std::string db_name = batch::database_name(opts.db);
    on_behalf_of(db_name, [&] {
        batch::ResultsDb db(opts.db, true);
        for (const std::int64_t dead : db.end_dead_runs())
            std::cerr << "batch: run " << dead << " stopped without finishing (its process is gone): marked interrupted\n";
        const std::int64_t run_id = db.begin_run(describe(opts, images.size()), opts.shard);
        batch::BatchSummary summary;
        {
            ProgressMeter meter("images");
            const Progress progress = meter.progress();
            const StopOnSignal interrupt;
            summary =
                batch::run_batch(db, run_id, images, options, interrupt.token(), [&](const BatchEvent& e) {
                    meter.clear();
                    if (opts.json)
                        std::cout << event_json(e).dump() << '\n' << std::flush;
                    else
                        std::cout << event_text(e) << '\n' << std::flush;
                    if (progress.report) progress.report(e.finished, e.total);
                });
        }
        db.end_run(run_id, summary.interrupted);
        std::cerr << "batch: " << summary.total << " images: " << summary.analysed << " analysed (" << summary.failed
                  << " failed), " << summary.skipped << " skipped as unchanged"
                  << (summary.busy ? ", " + std::to_string(summary.busy) + " left to a batch running beside it" : "")
                  << "; read "
                  << format_size(summary.bytes_read) << " in " << fixed(summary.seconds, 1) << " s; results in "
                  << db_name << '\n';
        if (summary.interrupted)
            throw Failure("batch", "interrupted with " +
                                       std::to_string(summary.total - summary.analysed - summary.skipped - summary.busy) +
                                       " images left: run the same command again to resume",
                          kInterrupted);
        if (summary.failed > 0)
            throw Failure("batch", std::to_string(summary.failed) + " of " + std::to_string(summary.total) +
                                       " images failed (their rows in " + db_name + " say why)",
                          kBadInput);
    });
}

}  // namespace

void add_batch_command(CLI::App& app) {
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "batch", "Analyse (and optionally plan) many images into a results database, throttled and resumable");
    cmd->add_option("IMAGE", opts->images, "Disk images, or directories to search for them");
    cmd->add_option("--list", opts->list, "File with one image path per line ('#' comments)");
    cmd->add_option("--db", opts->db,
                    "Results database: an SQLite file (created if missing) or a postgresql:// URI")
        ->type_name("DB")
        ->capture_default_str();
    cmd->add_option("--jobs", opts->jobs, "Images analysed at once")->check(CLI::Range(1u, 256u))->capture_default_str();
    cmd->add_option("--read-rate", opts->read_rate, "Most all workers together read per second (e.g. 100MiB/s)")
        ->check(rate_check());
    cmd->add_option("--per-datastore", opts->per_datastore,
                    "Most jobs at once on one storage device (file system); 0: no limit")
        ->capture_default_str();
    cmd->add_flag("--plan", opts->plan, "Also plan every volume (recommended strategy) and record impact warnings");
    cmd->add_flag(
        "--verdict", opts->verdict,
        "Also weigh every volume as report does and record the verdict (fleet --rank gain ranks by it)");
    add_dedup_chunk_option(*cmd, opts->dedup_chunk);
    cmd->add_option("--strategy", opts->strategy, "Plan with this strategy (implies --plan)")
        ->check(strategy_check());
    cmd->add_option("--order", opts->order, std::string(kOrderHelp) + " (implies --plan)")
        ->check(order_check());
    add_device_options(*cmd, opts->device);
    cmd->add_flag("--force", opts->force, "Re-analyse images that are unchanged since an earlier run");
    cmd->add_option("--shard", opts->shard, "Only the images of shard K of N (K/N, by path hash)")
        ->check(CLI::Validator(
            [](const std::string& text) {
                return batch::parse_shard(text) ? std::string() : "'" + text + "' is not a shard K/N with 1 <= K <= N";
            },
            "K/N"));
    CLI::Option* apply_to = cmd->add_option(
        "--apply-to", opts->apply_to,
        "Also carry each image's plan out into a new disk in DIR (implies --plan; created if missing)");
    apply_to->type_name("DIR");
    CLI::Option* compact_to = cmd->add_option(
        "--compact-to", opts->compact_to,
        "Also write each image compacted (only what NTFS uses, packed) into DIR (created if missing)");
    compact_to->type_name("DIR")->excludes(apply_to);
    add_new_disk_options(*cmd, opts->disk, apply_to, compact_to);
    cmd->add_flag("--json", opts->json, "One JSON object per image on stdout (JSON lines)");
    cmd->footer(std::string(kStrategyMeanings) + kOrderMeanings +
                "Example:\n  guestfrag batch /datastore --jobs 4 --read-rate 50MiB/s --plan --verdict\n");
    cmd->callback([opts] { run(*opts); });
}

}  // namespace guestfrag::cli
