// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag apply IMAGE --plan PLAN -o OUT`: carries a plan out offline into a new sparse raw
// disk or a qcow2 overlay of the input and proves the result (docs/apply.md). The input is
// only read.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/size_option.hpp"
#include "app/cli/stop_on_signal.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {
namespace {

using Json = nlohmann::ordered_json;

Json apply_json(const ApplyResult& r) {
    Json doc;
    doc["schema"] = "guestfrag.apply.v1";
    doc["output"] = r.output;
    doc["output_format"] = r.format == ApplyOutputFormat::Qcow2 ? "qcow2" : "raw";
    doc["partition"] = r.partition;
    doc["moves"] = {{"planned", r.plan.moves.size()}, {"done", r.moves.done.size()}, {"skipped", r.moves.skipped.size()}};
    Json by_reason = Json::object();
    Json skipped = Json::array();
    for (const SkippedMove& s : r.moves.skipped) {
        const Move& m = r.plan.moves[s.index];
        skipped.push_back({{"move", s.index}, {"mft_record", m.mft_record}, {"stream", m.stream}, {"reason", s.reason}});
        by_reason[s.reason] = by_reason.value(s.reason, 0) + 1;
    }
    doc["skipped"] = std::move(skipped);
    doc["skipped_by_reason"] = std::move(by_reason);
    doc["bytes_written"] = {
        {"disk", r.disk_bytes_written}, {"moved", r.moves.bytes_copied}, {"file", r.output_file_bytes}};
    doc["seconds"] = r.seconds;
    if (r.verification) {
        const ApplyVerification& v = *r.verification;
        doc["verification"] = {{"passed", true},
                               {"streams_hashed", v.streams_hashed},
                               {"allocation_matches_plan", true},
                               {"bitmap_matches_runlists", true},
                               {"mft_mirror_matches", true},
                               {"fragments_before", v.fragments_before},
                               {"fragments_predicted", v.fragments_predicted},
                               {"fragments_after", v.fragments_after}};
    } else {
        doc["verification"] = nullptr;
    }
    return doc;
}

void print_apply(std::ostream& out, const ApplyResult& r) {
    out << "applied " << r.moves.done.size() << " of " << r.plan.moves.size() << " moves to partition "
        << r.partition << " into " << r.output << " (" << format_size(r.moves.bytes_copied) << " moved, "
        << format_size(r.disk_bytes_written)
        << (r.format == ApplyOutputFormat::Qcow2 ? " of changed clusters in the qcow2 overlay, " : " of disk written, ")
        << fixed(r.seconds, 1) << " s)\n";
    std::map<std::string, std::size_t> reasons;
    for (const SkippedMove& s : r.moves.skipped) ++reasons[s.reason];
    for (const auto& [reason, n] : reasons) out << "  skipped " << n << ": " << reason << '\n';
    if (r.verification)
        out << "verified: " << r.verification->streams_hashed << " streams identical, allocation as predicted, "
            << "$Bitmap matches the runlists, $MFTMirr matches; fragments " << r.verification->fragments_before
            << " -> " << r.verification->fragments_after << '\n';
    else
        out << "not verified (--no-verify)\n";
}

}  // namespace

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
    cmd->add_option("--output-format", opts->output_format,
                    "raw: the whole disk, sparse; qcow2: an overlay of the changed clusters backed by IMAGE")
        ->check(CLI::IsMember({"raw", "qcow2"}))
        ->capture_default_str();
    cmd->add_option("--rate", opts->rate, "Most data copied per second, e.g. 50MiB/s")->check(rate_check());
    add_image_options(*cmd, opts->image_options);
    cmd->add_flag("--no-verify", opts->no_verify, "Skip the checks after the moves");
    cmd->add_flag("--allow-vss", opts->allow_vss,
                  "Apply even though shadow copies exist (an offline move bypasses their copy-on-write)");
    cmd->add_flag("--json", opts->json, "Print the guestfrag.apply.v1 JSON document");

    cmd->callback([opts] {
        Plan plan;
        on_behalf_of(opts->plan, [&] { plan = read_plan(opts->plan); });
        ApplyOptions options;
        options.output = opts->output;
        options.verify = !opts->no_verify;
        options.allow_vss = opts->allow_vss;
        options.format = opts->output_format == "qcow2" ? ApplyOutputFormat::Qcow2 : ApplyOutputFormat::Raw;
        RateLimiter limiter(rate_option(opts->rate));
        options.limiter = &limiter;
        ApplyResult result;
        {
            ProgressMeter meter("applying");
            Progress progress = meter.progress();
            const StopOnSignal interrupt;
            progress.stop = interrupt.token();
            try {
                on_behalf_of(opts->image, [&] {
                    result = apply_to_copy(opts->image, open_options(opts->image_options), std::move(plan), options, progress);
                });
            } catch (const Failure&) {
                if (interrupt.signal() != 0)
                    throw Failure(opts->image, "interrupted: no output was written", kInterrupted);
                throw;
            }
        }
        // As analyze shows them: what is wrong with the input's files although they could be read.
        for (const std::string& warning : result.warnings) std::cerr << "guestfrag: warning: " << warning << '\n';
        if (opts->json)
            std::cout << apply_json(result).dump(2) << '\n';
        else
            print_apply(std::cout, result);
    });
}

}  // namespace guestfrag::cli
