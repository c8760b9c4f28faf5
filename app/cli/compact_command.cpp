// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag compact IMAGE -o OUT`: a new image holding only what NTFS uses, its data packed
// into the fewest granules first (docs/compact.md). The input is only read.
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/apply_run.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/image_options.hpp"
#include "app/cli/size_option.hpp"
#include "core/io/rate_limiter.hpp"
#include "pipeline/compact.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

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
    const std::string granule = format_size(r.granule);
    out << "compacted " << image << " into " << r.output << " (" << compact_format_name(r.format) << ", "
        << fixed(r.seconds, 1) << " s)\n";
    for (const CompactVolume& v : r.volumes) {
        out << "  partition " << v.partition << ": ";
        if (r.packed)
            out << v.moves.done.size() << " of " << v.plan.moves.size() << " packing moves ("
                << format_size(v.moves.bytes_copied) << " moved), ";
        out << format_size(v.free_bytes) << " NTFS-free left out";
        if (v.verification)
            out << "; verified: " << v.verification->streams_hashed
                << " streams identical, allocation as predicted, $Bitmap and $MFTMirr match";
        out << '\n';
    }
    out << "granules of " << granule << " in use: " << r.granules_input << " stored by the input -> "
        << r.granules_sparsified << " sparsified";
    if (r.packed) out << " -> " << r.granules_packed << " packed";
    out << " -> " << r.granules_output << " in the output\n";
    if (r.packed)
        out << "packing gave back "
            << (r.granules_sparsified - std::min(r.granules_sparsified, r.granules_packed))
            << " granules more than sparsifying alone\n";
    out << "host bytes: " << format_size(r.host_bytes_input) << " held by the input -> "
        << format_size(r.host_bytes_output) << " by the output (" << format_size(r.data_bytes_output)
        << " of disk data)\n";
}

}  // namespace

void add_compact_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::string output;
        std::string output_format = "raw";
        std::string granule;
        std::string rate;
        ImageOptions image_options;
        bool pack = true;
        bool no_verify = false;
        bool allow_vss = false;
        bool json = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("compact",
                                       "Write a new image holding only what NTFS uses, packed into the "
                                       "fewest granules (the input is only read)");
    cmd->add_option("IMAGE", opts->image, "Disk image to compact")->required();
    cmd->add_option("-o,--output", opts->output, "New image to write (replaced only when verified)")
        ->required();
    cmd->add_option("--output-format", opts->output_format,
                    "raw (sparse), or qcow2, vmdk or vhdx (converted by qemu-img from the verified raw disk)")
        ->check(CLI::IsMember({"raw", "qcow2", "vmdk", "vhdx"}))
        ->capture_default_str();
    cmd->add_option("--granule", opts->granule,
                    "Host block to pack into (default: raw 1MiB, qcow2 64KiB, vmdk 64KiB, vhdx 1MiB)")
        ->check(size_check());
    cmd->add_flag("--pack,!--no-pack", opts->pack, "Move data into the fewest granules first (the default)");
    cmd->add_option("--rate", opts->rate, "Most data copied per second, e.g. 50MiB/s")->check(rate_check());
    add_image_options(*cmd, opts->image_options);
    cmd->add_flag("--no-verify", opts->no_verify, "Skip the checks");
    cmd->add_flag("--allow-vss", opts->allow_vss,
                  "Compact even though shadow copies exist (an offline move bypasses their copy-on-write)");
    cmd->add_flag("--json", opts->json, "Print the guestfrag.compact.v1 JSON document");

    cmd->callback([opts] {
        CompactOptions options;
        options.output = opts->output;
        options.replace = false;  // an existing OUT is refused, never replaced
        options.format = *parse_compact_format(opts->output_format);
        options.granule = size_option(opts->granule).value_or(0);
        options.pack = opts->pack;
        options.verify = !opts->no_verify;
        options.allow_vss = opts->allow_vss;
        RateLimiter limiter(rate_option(opts->rate));
        options.limiter = &limiter;
        CompactResult result;
        run_writing(opts->image, "compacting", result.warnings, [&](const Progress& progress) {
            result = compact_to_copy(opts->image, open_options(opts->image_options), options, progress);
        });
        if (opts->json)
            std::cout << compact_json(result).dump(2) << '\n';
        else
            print_compact(std::cout, opts->image, result);
    });
}

}  // namespace guestfrag::cli
