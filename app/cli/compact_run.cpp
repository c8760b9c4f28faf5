// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/compact_run.hpp"

#include <algorithm>

#include "app/cli/apply_run.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/size_option.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

using Json = nlohmann::ordered_json;

Json compact_json(const CompactResult& r) {
    Json doc;
    doc["schema"] = "guestfrag.compact.v1";
    doc["output"] = r.output;
    doc["output_format"] = compact_format_name(r.format);
    doc["granule_bytes"] = r.granule;
    doc["packed"] = r.packed;
    doc["disk_bytes"] = r.disk_bytes;
    doc["granules"] = {{"input", r.granules_input},
                       {"sparsified", r.granules_sparsified},
                       {"packed", r.granules_packed},
                       {"output", r.granules_output}};
    doc["host_bytes"] = {{"input", r.host_bytes_input}, {"output", r.host_bytes_output}};
    doc["data_bytes_output"] = r.data_bytes_output;
    doc["output_file_bytes"] = r.output_file_bytes;
    doc["bytes_copied"] = r.bytes_copied;
    Json volumes = Json::array();
    for (const CompactVolume& v : r.volumes) {
        Json volume = {{"partition", v.partition},
                       {"moves",
                        {{"planned", v.plan.moves.size()},
                         {"done", v.moves.done.size()},
                         {"skipped", v.moves.skipped.size()}}},
                       {"bytes_moved", v.moves.bytes_copied},
                       {"free_bytes_left_out", v.free_bytes},
                       {"notes", v.plan.notes}};
        if (v.verification) {
            volume["verification"] = verification_json(*v.verification);
        } else {
            volume["verification"] = nullptr;
        }
        volumes.push_back(std::move(volume));
    }
    doc["volumes"] = std::move(volumes);
    doc["seconds"] = r.seconds;
    return doc;
}

void print_compact(std::ostream& out, const std::string& image, const CompactResult& r) {
    out << "compacted " << image << " into " << r.output << " (" << compact_format_name(r.format) << ", "
        << fixed(r.seconds, 1) << " s)\n";
    // The headline is what the host gains: the files' blocks before and after. What NTFS
    // calls free is a detail below; much of it may never have been stored in the first place.
    out << "  on the host: " << format_size(r.host_bytes_output) << " instead of "
        << format_size(r.host_bytes_input) << ", ";
    if (r.host_bytes_output <= r.host_bytes_input) {
        const std::uint64_t saved = r.host_bytes_input - r.host_bytes_output;
        out << format_size(saved) << " saved";
        if (r.host_bytes_input > 0)
            out << " ("
                << fixed(100.0 * static_cast<double>(saved) / static_cast<double>(r.host_bytes_input), 1)
                << " %)";
    } else {
        // A container's tables, or an input whose layers hold less than its disk's data.
        out << format_size(r.host_bytes_output - r.host_bytes_input) << " more";
    }
    out << "; " << format_size(r.data_bytes_output) << " of disk data\n";
    for (const CompactVolume& v : r.volumes) {
        out << "  partition " << v.partition << ": ";
        if (r.packed)
            out << v.moves.done.size() << " of " << v.plan.moves.size() << " packing moves ("
                << format_size(v.moves.bytes_copied) << " moved), ";
        out << format_size(v.free_bytes) << " NTFS-free not copied\n";
        if (v.verification)
            out << "    verified: " << v.verification->streams_hashed
                << " streams identical, allocation as predicted, $Bitmap and $MFTMirr match\n";
    }
    out << "  " << format_size(r.granule) << " granules in use: " << r.granules_input << " in the input -> "
        << r.granules_sparsified << " sparsified";
    if (r.packed) out << " -> " << r.granules_packed << " packed";
    out << " -> " << r.granules_output << " output\n";
    if (r.packed)
        out << "  packing gave back "
            << (r.granules_sparsified - std::min(r.granules_sparsified, r.granules_packed))
            << " granules more than sparsifying alone\n";
}

void add_new_disk_options(CLI::App& cmd, NewDiskOptions& options, CLI::Option* apply, CLI::Option* compact) {
    const std::string a = apply->get_name(), c = compact->get_name();
    cmd.add_option("--output-format", options.output_format,
                   "With " + a + ": raw or qcow2 (as guestfrag apply); with " + c +
                       ": raw, qcow2, vmdk or vhdx (as guestfrag compact)")
        ->check(CLI::IsMember({"raw", "qcow2", "vmdk", "vhdx"}))
        ->capture_default_str();
    cmd.add_option("--granule", options.granule, "With " + c + ": the host block to pack into")
        ->check(size_check())
        ->needs(compact);
    cmd.add_flag("--pack,!--no-pack", options.pack,
                 "With " + c + ": pack into the fewest granules (the default)")
        ->needs(compact);
    cmd.add_flag("--no-verify", options.no_verify, "With " + a + " or " + c + ": skip the checks");
    cmd.add_flag(
        "--allow-vss", options.allow_vss,
        "With " + a + " or " + c +
            ": go on even though shadow copies exist (an offline move bypasses their copy-on-write)");
}

void check_new_disk_options(const NewDiskOptions& options, bool apply, bool compact) {
    if ((options.no_verify || options.allow_vss) && !apply && !compact)
        throw Failure("--no-verify, --allow-vss", "need an output to write (an apply or a compaction)",
                      kUsage);
    if (apply && options.output_format != output_format_name(output_format(options.output_format)))
        throw Failure("--output-format", "an apply writes raw or qcow2, not " + options.output_format,
                      kUsage);
}

CompactOptions compact_options(const std::string& output, const NewDiskOptions& options) {
    CompactOptions o;
    o.output = output;
    o.replace = false;  // an existing OUT is refused, never replaced
    o.format = *parse_compact_format(options.output_format);
    o.granule = size_option(options.granule).value_or(0);
    if (o.granule != 0) check_granule(o.format, o.granule);
    o.pack = options.pack;
    o.verify = !options.no_verify;
    o.allow_vss = options.allow_vss;
    return o;
}

CompactResult run_compact(const std::string& image, const ImageOptions& image_options, CompactOptions options,
                          const std::function<void(CompactOptions&, const std::stop_token&)>& with_stop) {
    CompactResult result;
    run_writing(image, "compacting", result.warnings, [&](const Progress& progress, ProgressMeter& meter) {
        if (with_stop) with_stop(options, progress.stop);
        options.on_step = announce_steps(meter, options.on_step, compact_steps(options).size());
        result = compact_to_copy(image, open_options(image_options), options, progress);
    });
    return result;
}

}  // namespace guestfrag::cli
