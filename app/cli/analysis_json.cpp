// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/analysis_json.hpp"

#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/io_stats_json.hpp"
#include "app/cli/json_output.hpp"
#include "app/cli/verdict_text.hpp"
#include "core/io/hex.hpp"

namespace guestfrag::cli {
namespace {

using Json = nlohmann::ordered_json;

Json layer_json(const Layer& layer, const HostLayout& host, const LayerProvisioning& p) {
    return {{"depth", layer.depth},
            {"path", layer.path},
            {"format", format_name(layer.format)},
            {"granule_size", layer.granule_size},
            {"growth_unit", layer.growth_granule()},
            {"allocated_bytes", layer.allocated_bytes()},
            {"warnings", layer.warnings},
            {"provisioning", provisioning_json(p)},
            {"host", host_layout_json(host)}};
}

Json physical_json(const std::vector<PhysicalFigures>& files) {
    Json out = Json::array();
    for (const PhysicalFigures& p : files) {
        Json j = {{"file", p.file.file}, {"path", p.file.path}, {"known", p.file.known()}};
        if (p.file.known())
            j.update({{"extents", p.extents}, {"mapped_bytes", p.mapped_bytes}, {"unplaced_extents", p.file.unplaced_extents}});
        else
            j["note"] = p.file.note;
        out.push_back(std::move(j));
    }
    return out;
}

Json copy_json(const ImageAnalysis& a) {
    const ImageCopyCost& c = a.copy;
    Json layers = Json::array();
    for (std::size_t i = 0; i < c.layers.size(); ++i) {
        Json j = {{"depth", a.layers[i].depth}};
        j.update(copy_figures_json(c.layers[i]));
        j["physical_files"] = physical_json(c.physical[i]);
        layers.push_back(std::move(j));
    }
    Json warnings = Json::array();
    for (const CopyWarning& w : c.warnings) warnings.push_back({{"code", w.code}, {"message", w.message}});
    return {{"chain", copy_figures_json(c.chain)}, {"layers", std::move(layers)}, {"warnings", std::move(warnings)}};
}

const char* placement_name(Placement p) {
    return p == Placement::Movable ? "movable" : p == Placement::Unmovable ? "unmovable" : "excluded";
}

template <typename Integer>
void append_number(std::string& text, Integer value) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    text.append(digits, end);
}

/// One stream of `--files` (docs/design.md §6) as dump(2) writes it `indent` spaces deep:
/// made field by field, for a volume has a million of them.
void append_stream(std::string& text, const VolumeMap& map, const Stream& s, std::size_t indent) {
    const auto line = [&](std::size_t depth) {
        text += '\n';
        text.append(indent + depth, ' ');
    };
    const auto field = [&](std::string_view key) {
        line(2);
        text += '"';
        text += key;
        text += "\": ";
    };
    text += '{';
    field("mft_record");
    append_number(text, s.mft_record);
    text += ',';
    field("path");
    append_json_string(text, map.path_of(s.mft_record));
    text += ',';
    field("stream");
    append_json_string(text, s.label());
    text += ',';
    field("size");
    append_number(text, s.size);
    text += ',';
    field("allocated_size");
    append_number(text, s.allocated_size);
    text += ',';
    field("fragments");
    append_number(text, s.fragments());
    text += ',';
    field("flags");
    std::vector<std::string_view> flags;
    if (s.flags & Stream::kCompressed) flags.emplace_back("compressed");
    if (s.flags & Stream::kEncrypted) flags.emplace_back("encrypted");
    if (s.flags & Stream::kSparse) flags.emplace_back("sparse");
    for (std::size_t i = 0; i < flags.size(); ++i) {
        text += i == 0 ? "[" : ",";
        line(4);
        append_json_string(text, flags[i]);
    }
    if (flags.empty()) {
        text += "[]";
    } else {
        line(2);
        text += ']';
    }
    text += ',';
    field("placement");
    append_json_string(text, placement_name(s.placement));
    text += ',';
    field("extents");
    for (std::size_t i = 0; i < s.extents.size(); ++i) {
        const Extent& e = s.extents[i];
        text += i == 0 ? "[" : ",";
        line(4);
        text += '[';
        line(6);
        append_number(text, e.vcn);
        text += ',';
        line(6);
        append_number(text, e.lcn);
        text += ',';
        line(6);
        append_number(text, e.clusters);
        line(4);
        text += ']';
    }
    if (s.extents.empty()) {
        text += "[]";
    } else {
        line(2);
        text += ']';
    }
    if (!s.reason.empty()) {
        text += ',';
        field("reason");
        append_json_string(text, s.reason);
    }
    line(0);
    text += '}';
}

Json volume_json(const VolumeAnalysis& v) {
    const VolumeMap& m = v.map;
    const FileFragmentation& f = v.files;
    const FreeSpaceFragmentation& fs = v.free_space;
    Json histogram = Json::array();
    for (const auto& b : fs.histogram)
        histogram.push_back({{"min_bytes", b.min_bytes}, {"extents", b.extents}, {"bytes", b.bytes}});
    Json j = {
        {"partition", m.partition},
        {"offset", m.partition_offset},
        {"label", m.label},
        {"serial", hex16(m.serial)},
        {"ntfs_version", m.ntfs_version},
        {"cluster_size", m.cluster_size},
        {"total_clusters", m.total_clusters},
        {"free_clusters", m.free_clusters()},
        {"unmovable_clusters", boost::icl::length(m.unmovable)},
        {"files",
         {{"count", f.files},
          {"fragmented", f.fragmented_files},
          {"streams", f.streams},
          {"fragmented_streams", f.fragmented_streams},
          {"fragments", f.fragments},
          {"excess_fragments", f.excess_fragments},
          {"fragmented_bytes", f.fragmented_bytes},
          {"fragmentation_percent", f.fragmentation_percent},
          {"average_fragments_per_file", f.average_fragments_per_file},
          {"pagefile_fragments", f.pagefile_fragments}}},
        {"free_space",
         {{"extents", fs.extents},
          {"largest_extent_clusters", fs.largest_extent_clusters},
          {"average_extent_clusters", fs.average_extent_clusters},
          {"fragmentation_percent", fs.fragmentation_percent},
          {"histogram", std::move(histogram)}}},
        {"mft",
         {{"record_size", m.mft_record_size},
          {"records_total", m.mft_records_total},
          {"records_in_use", m.mft_records_in_use},
          {"fragments", f.mft_fragments},
          {"zone", m.mft_zone.empty()
                       ? Json(nullptr)
                       : Json::array({m.mft_zone.begin()->lower(), m.mft_zone.begin()->upper()})}}},
    };
    Json layers = Json::array();
    for (const LayerUsage& u : v.layers)
        layers.push_back({{"depth", u.depth},
                          {"granule_size", u.granule_size},
                          {"allocated_bytes", u.allocated_bytes},
                          {"ntfs_used_bytes", u.ntfs_used_bytes},
                          {"ntfs_free_bytes", u.ntfs_free_bytes},
                          {"reclaimable_bytes", u.reclaimable_bytes},
                          {"host", host_layout_json(u.host)}});
    j["layers"] = std::move(layers);
    Json warnings = Json::array();
    for (const VolumeFinding& finding : m.findings) {
        Json conflicts = Json::array();
        for (const ClusterConflict& c : finding.conflicts) {
            Json inodes = Json::array({c.record});
            if (c.other != c.record) inodes.push_back(c.other);
            conflicts.push_back({{"clusters", Json::array({c.first, c.end - 1})}, {"inodes", std::move(inodes)}});
        }
        warnings.push_back({{"code", finding.code},
                            {"message", finding.message},
                            {"blocks_plan", finding.blocks_moves},
                            {"conflicts", std::move(conflicts)},
                            {"conflict_count", finding.conflict_count},
                            {"clusters", finding.clusters}});
    }
    j["warnings"] = std::move(warnings);
    return j;
}

}  // namespace

Json copy_figures_json(const CopyFigures& c) {
    Json offload = Json::array();
    for (const OffloadFigures& f : c.offload)
        offload.push_back({{"transfer_size", f.transfer_size},
                           {"command_limit", f.command_limit},
                           {"now",
                            {{"commands", f.commands},
                             {"compressed_commands", f.compressed_commands},
                             {"average_bytes", f.average_bytes},
                             {"seconds", f.seconds}}},
                           {"relaid",
                            {{"commands", f.relaid_commands},
                             {"average_bytes", f.relaid_average_bytes},
                             {"seconds", f.relaid_seconds}}}});
    return {
        {"bytes", c.bytes},
        {"runs", c.runs},
        {"relaid_runs", c.relaid_runs},
        {"compressed_bytes", c.compressed_bytes},
        {"compressed_transfers", c.compressed_transfers},
        {"offload", std::move(offload)},
        {"host_copy", {{"now", io_stats_json(c.host_copy)}, {"relaid", io_stats_json(c.host_copy_relaid)}}}};
}

Json provisioning_json(const LayerProvisioning& p) {
    return {{"type", provisioning_name(p.type)},
            {"zero_block", p.zero_block},
            {"assumed", p.assumed},
            {"basis", p.basis}};
}

Json host_layout_json(const HostLayout& h) {
    return {{"stored_bytes", h.stored_bytes},
            {"unplaced_bytes", h.unplaced_bytes},
            {"extents", h.extents},
            {"seeks", h.seeks},
            {"backward_seeks", h.backward_seeks},
            {"granules", h.granules},
            {"fragmentation_percent", h.fragmentation_percent}};
}

Json analysis_to_json(const ImageAnalysis& a, std::span<const LayerProvisioning> provisioning) {
    Json layers = Json::array();
    for (std::size_t i = 0; i < a.layers.size(); ++i)
        layers.push_back(layer_json(a.layers[i], a.host[i],
                                    i < provisioning.size() ? provisioning[i] : a.layers[i].provisioning));
    Json partitions = Json::array();
    for (const Partition& p : a.table.partitions)
        partitions.push_back({{"number", p.number},
                              {"start", p.start},
                              {"length", p.length},
                              {"type", p.type},
                              {"filesystem", p.filesystem}});
    Json volumes = Json::array();
    for (const VolumeAnalysis& v : a.volumes) volumes.push_back(volume_json(v));
    return {{"schema", "guestfrag.analysis.v1"},
            {"image",
             {{"path", a.path},
              {"format", format_name(a.format)},
              {"virtual_size", a.virtual_size},
              {"layers", layers},
              {"copy", copy_json(a)}}},
            {"partition_table", a.table.label},
            {"partitions", std::move(partitions)},
            {"volumes", std::move(volumes)}};
}

void write_analysis_json(std::ostream& out, const ImageAnalysis& a, bool with_streams,
                         std::span<const LayerProvisioning> provisioning,
                         std::span<const VolumeVerdict> verdicts) {
    Json doc = analysis_to_json(a, provisioning);
    for (std::size_t i = 0; i < verdicts.size(); ++i)
        doc["volumes"][i]["verdict"] = verdict_to_json(verdicts[i]);
    std::vector<StreamedArray> arrays;
    if (with_streams)
        for (std::size_t i = 0; i < a.volumes.size(); ++i) {
            const VolumeMap& map = a.volumes[i].map;
            arrays.push_back({&doc["volumes"][i]["streams"], map.streams.size(),
                              [&map](std::string& text, std::size_t k, std::size_t indent) {
                                  append_stream(text, map, map.streams[k], indent);
                              }});
        }
    write_json(out, doc, arrays);
}

}  // namespace guestfrag::cli
