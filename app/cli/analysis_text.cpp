// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/analysis_text.hpp"

#include "app/cli/provisioning_options.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "app/cli/columns.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {
namespace {

void row(std::ostream& out, const std::string& label, const std::string& value) {
    out << hanging("  " + pad(label, 30), value);
}

void print_volume(std::ostream& out, const VolumeAnalysis& v, std::size_t top, bool all_files) {
    const VolumeMap& m = v.map;
    const FileFragmentation& f = v.files;
    const FreeSpaceFragmentation& fs = v.free_space;
    const std::uint64_t cs = m.cluster_size;
    out << "Volume on partition " << m.partition << (m.label.empty() ? "" : " \"" + m.label + "\"")
        << " (NTFS " << m.ntfs_version << ")\n";
    row(out, "Size", format_size(static_cast<std::uint64_t>(m.total_clusters) * cs) + " in " +
                         std::to_string(m.total_clusters) + " clusters of " + format_size(cs));
    row(out, "Free", format_size(static_cast<std::uint64_t>(m.free_clusters()) * cs) + " (" +
                         fixed(100.0 * static_cast<double>(m.free_clusters()) /
                                   static_cast<double>(std::max<std::int64_t>(m.total_clusters, 1)),
                               1) +
                         "%)");
    row(out, "Files and directories", std::to_string(f.files));
    row(out, "Fragmented files", std::to_string(f.fragmented_files) + " (" + std::to_string(f.fragmented_streams) +
                                     " of " + std::to_string(f.streams) + " streams)");
    row(out, "Fragments", std::to_string(f.fragments) + " (" + std::to_string(f.excess_fragments) + " excess)");
    row(out, "Fragmented data", format_size(f.fragmented_bytes));
    row(out, "File fragmentation", fixed(f.fragmentation_percent, 2) + "%");
    row(out, "Average fragments per file", fixed(f.average_fragments_per_file, 2));
    row(out, "MFT", std::to_string(m.mft_records_in_use) + " of " + std::to_string(m.mft_records_total) +
                        " records in use, " + std::to_string(f.mft_fragments) + " fragment(s)");
    if (f.pagefile_fragments != 0) row(out, "Page file fragments", std::to_string(f.pagefile_fragments));
    row(out, "Free extents", std::to_string(fs.extents) + ", largest " +
                                 format_size(fs.largest_extent_clusters * cs) + ", average " +
                                 format_size(static_cast<std::uint64_t>(fs.average_extent_clusters * static_cast<double>(cs))));
    row(out, "Free-space fragmentation", fixed(fs.fragmentation_percent, 2) + "%");
    // One fact a row, so that each fits 100 columns.
    for (const LayerUsage& u : v.layers) {
        row(out, "Layer " + std::to_string(u.depth) + " in this volume",
            format_size(u.allocated_bytes) + " allocated: " + format_size(u.ntfs_used_bytes) +
                " NTFS-used, " + format_size(u.ntfs_free_bytes) + " NTFS-free");
        row(out, "  reclaimable", format_size(u.reclaimable_bytes) + " (NTFS-free in whole granules)");
        row(out, "  file layout", host_layout_text(u.host));
    }

    if (!m.findings.empty()) {
        // As chkdsk would list them: these volumes need repairing in the guest first.
        out << "\n  Warnings\n";
        for (const VolumeFinding& finding : m.findings) {
            out << "  " << pad(finding.code, 26) << finding.message << '\n';
            if (finding.conflicts.size() <= 1) continue;
            for (const ClusterConflict& c : finding.conflicts)
                out << "  " << pad("", 26) << "clusters " << c.first << "-" << c.end - 1 << ": inode " << c.record
                    << (c.other != c.record ? " and inode " + std::to_string(c.other) : std::string()) << '\n';
        }
    }

    if (!fs.histogram.empty()) {
        out << "\n  Free extents by size\n";
        out << "  " << pad("from", 12) << pad("extents", 10, true) << pad("free space", 14, true) << "\n";
        for (const auto& b : fs.histogram)
            out << "  " << pad(format_size(b.min_bytes), 12) << pad(std::to_string(b.extents), 10, true)
                << pad(format_size(b.bytes), 14, true) << '\n';
    }

    const std::size_t limit = all_files ? m.streams.size() : top;
    const auto worst = most_fragmented_streams(m, limit);
    std::vector<const Stream*> fragmented;
    std::ranges::copy_if(worst, std::back_inserter(fragmented), [](const Stream* s) { return s->fragments() > 1; });
    if (fragmented.empty()) {
        out << "\n  No fragmented files.\n";
        return;
    }
    out << "\n  " << (all_files ? "Fragmented files" : "Most fragmented files") << "\n";
    out << "  " << pad("fragments", 10, true) << pad("size", 12, true) << "  path\n";
    for (const Stream* s : fragmented) {
        std::string name = m.path_of(s->mft_record);
        if (s->label() != "$DATA") name += " [" + s->label() + "]";
        if (s->placement != Placement::Movable) name += " (" + std::string(s->reason) + ")";
        out << "  " << pad(std::to_string(s->fragments()), 10, true) << pad(format_size(s->size), 12, true) << "  "
            << name << '\n';
    }
}

void print_copy(std::ostream& out, const ImageAnalysis& a) {
    const ImageCopyCost& c = a.copy;
    const CopyFigures& f = c.chain;
    out << "\nCopy cost (a full clone of " << (a.layers.size() > 1 ? "the chain" : "the image") << ": "
        << format_size(f.bytes) << " in " << f.runs << " host run(s), " << f.relaid_runs << " if re-laid";
    if (f.compressed_bytes != 0)
        out << "; " << format_size(f.compressed_bytes) << " compressed, one transfer per cluster/grain";
    out << ")\n";
    // Each figure now and with the data re-laid, under the figure's name.
    out << "  " << pad("", 10) << pad("offload commands", 22, true) << pad("average command", 22, true)
        << pad("offload time", 22, true) << '\n';
    out << "  " << pad("transfer", 10);
    for (int figure = 0; figure < 3; ++figure) out << pad("now", 11, true) << pad("re-laid", 11, true);
    out << '\n';
    for (const OffloadFigures& o : f.offload)
        out << "  " << pad(format_size(o.transfer_size), 10) << pad(std::to_string(o.commands), 11, true)
            << pad(std::to_string(o.relaid_commands), 11, true)
            << pad(format_size(static_cast<std::uint64_t>(o.average_bytes)), 11, true)
            << pad(format_size(static_cast<std::uint64_t>(o.relaid_average_bytes)), 11, true)
            << pad(seconds_text(o.seconds), 11, true) << pad(seconds_text(o.relaid_seconds), 11, true)
            << '\n';
    const auto host = [](const IoStats& s) {
        return std::to_string(s.ios) + " reads, " + fixed(s.sequential_percent, 1) + "% sequential; hdd " +
               seconds_text(s.device_seconds.hdd) + ", ssd " + seconds_text(s.device_seconds.ssd) + ", array " +
               seconds_text(s.device_seconds.array);
    };
    row(out, "Host-side copy now", host(f.host_copy));
    row(out, "Host-side copy re-laid", host(f.host_copy_relaid));
    for (std::size_t i = 0; i < c.layers.size() && a.layers.size() > 1; ++i) {
        const CopyFigures& l = c.layers[i];
        std::string text = format_size(l.bytes) + " in " + std::to_string(l.runs) + " run(s)";
        if (!l.offload.empty())
            text += "; " + std::to_string(l.offload.front().commands) + " commands at " +
                    format_size(l.offload.front().transfer_size) + " (" +
                    std::to_string(l.offload.front().relaid_commands) + " re-laid)";
        row(out, "Layer " + std::to_string(a.layers[i].depth) + " on its own", text);
    }
    for (std::size_t i = 0; i < c.physical.size(); ++i)
        for (const PhysicalFigures& p : c.physical[i])
            row(out, "Layer " + std::to_string(a.layers[i].depth) + " physical extents",
                (p.file.known() ? std::to_string(p.extents) + " on the host device (FIEMAP" +
                                      (p.file.unplaced_extents != 0
                                           ? "; " + std::to_string(p.file.unplaced_extents) + " not placed yet"
                                           : std::string()) +
                                      ")"
                                : "unknown: " + p.file.note) +
                    ": " + p.file.path);
    for (const CopyWarning& w : c.warnings) out << hanging("  " + pad(w.code, 26), w.message);
}

}  // namespace

std::string host_layout_text(const HostLayout& h) {
    std::string text = std::to_string(h.extents) + " extent(s), " + std::to_string(h.seeks) + " seek(s) (" +
                       std::to_string(h.backward_seeks) + " backward), " + fixed(h.fragmentation_percent, 2) +
                       "% fragmented";
    if (h.unplaced_bytes != 0) text += "; " + format_size(h.unplaced_bytes) + " compressed";
    return text;
}

void print_analysis(std::ostream& out, const ImageAnalysis& a, std::size_t top, bool all_files,
                    std::span<const LayerProvisioning> provisioning) {
    // What the user came for first: each volume's fragmentation, then the image's make-up.
    for (const VolumeAnalysis& v : a.volumes) {
        print_volume(out, v, top, all_files);
        out << '\n';
    }
    out << "Image " << a.path << "\n";
    row(out, "Format", std::string(format_name(a.format)));
    row(out, "Virtual size", format_size(a.virtual_size) + " (" + std::to_string(a.virtual_size) + " bytes)");
    for (std::size_t i = 0; i < a.layers.size(); ++i) {
        const Layer& l = a.layers[i];
        row(out, "Layer " + std::to_string(l.depth) + " (" + std::string(format_name(l.format)) + ")",
            format_size(l.allocated_bytes()) + " allocated in " + format_size(l.granule_size) + " granules");
        row(out, "  file", l.path);
        row(out, "  file layout", host_layout_text(a.host[i]));
        row(out, "  provisioning", provisioning_text(i < provisioning.size() ? provisioning[i] : l.provisioning));
    }
    print_copy(out, a);
    out << "\nPartitions (" << a.table.label << ")\n";
    out << "  " << pad("#", 4) << pad("start", 14, true) << pad("length", 14, true) << "  " << pad("type", 11)
        << "file system\n";
    for (const Partition& p : a.table.partitions)
        out << "  " << pad(std::to_string(p.number), 4) << pad(std::to_string(p.start), 14, true)
            << pad(format_size(p.length), 14, true) << "  " << pad(p.type, 11)
            << (p.filesystem.empty() ? "-" : p.filesystem) << '\n';
}

}  // namespace guestfrag::cli
