// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/apply_run.hpp"

#include <iostream>
#include <map>

#include "app/cli/columns.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/stop_on_signal.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

using Json = nlohmann::ordered_json;

}  // namespace

nlohmann::ordered_json verification_json(const ApplyVerification& v) {
    return {
        {"passed", true},
        {"streams_hashed", v.streams_hashed},
        {"allocation_matches_plan", true},
        {"bitmap_matches_runlists", true},
        {"mft_mirror_matches", true},
        {"records", {{"changed", v.records_changed}, {"freed", v.records_freed}, {"added", v.records_added}}},
        {"attribute_list_clusters_freed", v.attribute_list_clusters_freed},
        {"attribute_list_clusters_taken", v.attribute_list_clusters_taken},
        {"fragments_before", v.fragments_before},
        {"fragments_predicted", v.fragments_predicted},
        {"fragments_after", v.fragments_after}};
}

nlohmann::ordered_json apply_json(const ApplyResult& r) {
    Json doc;
    doc["schema"] = "guestfrag.apply.v1";
    doc["output"] = r.output;
    doc["output_format"] = output_format_name(r.format);
    doc["partition"] = r.partition;
    doc["moves"] = {
        {"planned", r.plan.moves.size()}, {"done", r.moves.done.size()}, {"skipped", r.moves.skipped.size()}};
    Json by_reason = Json::object();
    Json skipped = Json::array();
    for (const SkippedMove& s : r.moves.skipped) {
        const Move& m = r.plan.moves[s.index];
        skipped.push_back(
            {{"move", s.index}, {"mft_record", m.mft_record}, {"stream", m.stream}, {"reason", s.reason}});
        by_reason[s.reason] = by_reason.value(s.reason, 0) + 1;
    }
    doc["skipped"] = std::move(skipped);
    doc["skipped_by_reason"] = std::move(by_reason);
    doc["bytes_written"] = {
        {"disk", r.disk_bytes_written}, {"moved", r.moves.bytes_copied}, {"file", r.output_file_bytes}};
    doc["seconds"] = r.seconds;
    if (r.verification) {
        doc["verification"] = verification_json(*r.verification);
    } else {
        doc["verification"] = nullptr;
    }
    return doc;
}

void print_apply(std::ostream& out, const ApplyResult& r) {
    out << "applied " << r.moves.done.size() << " of " << r.plan.moves.size() << " moves to partition "
        << r.partition << " into " << r.output << " (" << format_size(r.moves.bytes_copied) << " moved, "
        << format_size(r.disk_bytes_written)
        << (r.format == ApplyOutputFormat::Qcow2 ? " of changed clusters in the qcow2 overlay, "
                                                 : " of disk written, ")
        << fixed(r.seconds, 1) << " s)\n";
    std::map<std::string, std::size_t> reasons;
    for (const SkippedMove& s : r.moves.skipped) ++reasons[s.reason];
    for (const auto& [reason, n] : reasons) out << "  skipped " << n << ": " << reason << '\n';
    if (r.verification)
        out << "verified: " << r.verification->streams_hashed
            << " streams identical, allocation as predicted, "
            << "$Bitmap matches the runlists, $MFTMirr matches, " << r.verification->records_changed
            << " MFT records changed, all of moved files; fragments " << r.verification->fragments_before
            << " -> " << r.verification->fragments_after << '\n';
    else
        out << "not verified (--no-verify)\n";
}

void add_output_format_option(CLI::App& cmd, std::string& format) {
    cmd.add_option(
           "--output-format", format,
           "raw: the whole disk, sparse; qcow2: an overlay of the changed clusters backed by the image")
        ->check(CLI::IsMember(
            {output_format_name(ApplyOutputFormat::Raw), output_format_name(ApplyOutputFormat::Qcow2)}))
        ->capture_default_str();
}

ApplyOutputFormat output_format(const std::string& text) {
    return text == output_format_name(ApplyOutputFormat::Qcow2) ? ApplyOutputFormat::Qcow2
                                                                : ApplyOutputFormat::Raw;
}

void run_writing(const std::string& image, const char* what, const std::vector<std::string>& warnings,
                 const std::function<void(const Progress&, ProgressMeter&)>& work) {
    {
        ProgressMeter meter(what);
        Progress progress = meter.progress();
        const StopOnSignal interrupt;
        progress.stop = interrupt.token();
        try {
            on_behalf_of(image, [&] { work(progress, meter); });
        } catch (const Failure&) {
            if (interrupt.signal() != 0)
                throw Failure(image, "interrupted: no output was written", kInterrupted);
            throw;
        }
    }
    // As analyze shows them: what is wrong with the input's files although they could be read.
    for (const std::string& warning : warnings) std::cerr << "guestfrag: warning: " << warning << '\n';
}

ApplyResult run_apply(const std::string& image, const ImageOptions& image_options, PendingPlan& plan,
                      const ApplyOptions& options) {
    ApplyResult result;
    run_writing(image, "applying", result.warnings, [&](const Progress& progress, ProgressMeter& meter) {
        ApplyOptions shown = options;
        shown.on_step = announce_steps(meter, options.on_step, apply_steps(options).size());
        result = apply_to_copy(image, open_options(image_options), plan, shown, progress);
    });
    return result;
}

}  // namespace guestfrag::cli
