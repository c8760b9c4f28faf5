// SPDX-License-Identifier: GPL-2.0-or-later
// The thresholds here are documented in docs/impact.md §8; keep them in step.
#include "core/impact/warnings.hpp"

#include <algorithm>
#include <cstdio>

namespace guestfrag {

namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

/// "1.50 GiB" — the core's messages name sizes the way the CLI prints them.
std::string size_text(std::uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024 && unit < 6) {
        value /= 1024;
        ++unit;
    }
    char text[32];
    if (unit == 0)
        std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(text, sizeof text, value < 10 ? "%.2f %s" : value < 100 ? "%.1f %s" : "%.0f %s", value,
                      kUnits[unit]);
    return text;
}

/// Growth of a tenth of the disk or more is critical: it is what makes a thin datastore
/// run out of space.
Severity growth_severity(std::uint64_t bytes, std::uint64_t disk) {
    return bytes * 10 >= disk ? Severity::Critical : Severity::Warning;
}

}  // namespace

std::vector<ImpactWarning> impact_warnings(const Impact& impact, const DiskImage& image) {
    std::vector<ImpactWarning> out;
    const std::vector<Layer>& layers = image.layers();
    const std::string granule = size_text(impact.granule_size);

    const bool thin = impact.plan_writes.provisioning.type == Provisioning::Thin;
    // A thick top layer (detected, or as --provisioning says) is allocated whole: it does
    // not grow. What the plan frees there can be given back, so it is weighed net of that,
    // as the verdict weighs it (docs/verdict.md §2, rule 5).
    if (const std::uint64_t b = impact.growth.thin_growth_bytes; b > 0 && thin) {
        const std::uint64_t freed = impact.freed_bytes();
        const std::uint64_t net = b > freed ? b - freed : 0;
        std::string message = "the plan writes into " + size_text(b) + " of " + granule +
                              " granules no layer has allocated: the thin disk grows by that much";
        if (freed > 0)
            message +=
                " (" + size_text(net) + " net once the " + size_text(freed) + " it frees is reclaimed)";
        out.push_back({"THIN_GROWTH", growth_severity(net, image.size()), b,
                       message + "; use the thin-safe strategy (no growth) or cap it with --max-growth"});
    }
    if (const std::uint64_t b = impact.growth.clone_delta_growth_bytes; b > 0)
        out.push_back({"CLONE_DELTA_GROWTH", growth_severity(b, image.size()), b,
                       "the plan writes into " + size_text(b) + " of " + granule +
                           " granules that only the parent image holds: each is copied whole into this disk's delta; "
                           "use thin-safe, or defragment the parent and recompose the clones"});
    if (impact.clone.parent_layers > 0) {
        const std::string parent = layers.size() > 1 ? layers[1].path : "the parent image";
        const std::uint64_t b = impact.clone.sharing_lost_bytes;
        // Said so that it agrees with the growth figures: copied data lands in blocks the
        // clone holds already, or in new ones, which CLONE_DELTA_GROWTH and THIN_GROWTH count.
        const std::uint64_t grown = impact.growth.clone_delta_growth_bytes + impact.growth.thin_growth_bytes;
        const std::string where = b == 0       ? ""
                                  : grown == 0 ? ", into blocks it holds already (the delta does not grow)"
                                               : ", the delta growing by " + size_text(grown);
        out.push_back({"SHARED_BASE_IMAGE", b > 0 ? Severity::Warning : Severity::Info, b,
                       "this disk is a linked clone of " + parent + " (" +
                           size_text(impact.clone.shared_bytes) +
                           " of its files read through to the base); the plan copies " + size_text(b) +
                           " of shared base data into the clone" + where +
                           ". Defragment the parent, then recompose the clones"});
    }
    if (const auto& h = impact.host; h.after.seeks > h.before.seeks) {
        const std::string file = layers.empty() ? "the image file" : layers.front().path;
        out.push_back({"HOST_FRAGMENTATION", Severity::Info, h.new_bytes,
                       "the plan places " + size_text(h.new_bytes) + " of new " +
                           size_text(layers.empty() ? 0 : layers.front().growth_granule()) +
                           " units at the end of " + file +
                           ", out of disk order: a sequential read of the volume "
                           "seeks " +
                           std::to_string(h.before.seeks) + " -> " + std::to_string(h.after.seeks) +
                           " times in the file; rewrite the file in order afterwards (qemu-img convert, "
                           "vmkfstools -i, Convert-VHD) or use thin-safe"});
    }
    // Only a thin disk gives space back: a thick one (lazy or eager, as detected or as
    // --provisioning says) keeps every block it was created with, TRIM or not.
    if (thin && (impact.reclaimable_bytes_before > 0 || impact.reclaimable_bytes_after > 0)) {
        std::string message = size_text(impact.reclaimable_bytes_before) +
                               " of NTFS-free space is still allocated in the top layer";
        if (impact.reclaimable_bytes_after > impact.reclaimable_bytes_before)
            message += " (" + size_text(impact.reclaimable_bytes_after) + " after the plan)";
        message += "; reclaim it with " + impact.reclaim_how;
        out.push_back({"RECLAIMABLE_SPACE", Severity::Info,
                       std::max(impact.reclaimable_bytes_before, impact.reclaimable_bytes_after), message});
    }
    if (impact.written_bytes > 0) {
        const auto cbt = std::find_if(impact.snapshot.begin(), impact.snapshot.end(),
                                      [](const SnapshotDelta& s) { return s.granularity == 64 * 1024; });
        const std::uint64_t b = cbt == impact.snapshot.end() ? impact.written_bytes : cbt->bytes;
        out.push_back({"SNAPSHOT_DELTA", b >= kGiB ? Severity::Warning : Severity::Info, b,
                       "snapshots, CBT backups and replication see " + size_text(b) +
                           " of changed 64 KiB blocks: run the plan right after a full backup with no snapshot "
                           "open, and expect the next incremental and replication cycle to carry it"});
    }
    {
        // The worst chunk size decides: with --deep the real loss of distinct content,
        // otherwise the chunks a post-process deduplicator must look at again.
        std::uint64_t lost = 0;
        std::uint64_t lost_chunk = 0;
        std::uint64_t rewritten = 0;
        std::uint64_t rewritten_chunk = 0;
        for (const DedupFigures& d : impact.dedup) {
            if (d.deep && d.deep->unique_after > d.deep->unique_before &&
                (d.deep->unique_after - d.deep->unique_before) * d.chunk > lost) {
                lost = (d.deep->unique_after - d.deep->unique_before) * d.chunk;
                lost_chunk = d.chunk;
            }
            if (d.changed_chunks * d.chunk > rewritten) {
                rewritten = d.changed_chunks * d.chunk;
                rewritten_chunk = d.chunk;
            }
        }
        if (lost > 0)
            out.push_back({"DEDUP_LOSS", Severity::Warning, lost,
                           "after the plan the disk holds " + size_text(lost) + " more distinct " +
                               size_text(lost_chunk) +
                               " chunks: a deduplicating array stores that much more; prefer a plan that moves "
                               "whole aligned chunks (consolidate) or skip deduplicated datastores"});
        else if (rewritten > 0 && !(impact.dedup.front().deep))
            out.push_back({"DEDUP_LOSS", Severity::Info, rewritten,
                           "the plan rewrites " + size_text(rewritten) + " of " + size_text(rewritten_chunk) +
                               " chunks that a post-process deduplicator must scan again; run impact --deep for "
                               "the change in distinct chunks"});
    }
    if (impact.vss.copy_on_write && impact.vss.copy_on_write_bytes > 0)  // a plan that moves something
        out.push_back({"VSS_COPY_ON_WRITE", Severity::Warning, impact.vss.copy_on_write_bytes,
                       std::to_string(impact.vss.store_files) + " shadow copy store(s) (" +
                           size_text(impact.vss.store_bytes) + ") and " + size_text(impact.vss.cluster_size) +
                           " clusters (under 16 KiB): Windows copies " + size_text(impact.vss.copy_on_write_bytes) +
                           " of moved blocks into the diff area, which can purge older shadow copies; delete "
                           "the shadow copies first or accept their loss"});
    for (const AlignmentFigures& a : impact.alignment) {
        if (!a.misaligned_chunks.empty()) {
            out.push_back({"MISALIGNED_PARTITION", Severity::Warning, a.length,
                           "partition " + std::to_string(a.partition) + " starts at byte " + std::to_string(a.start) +
                               ", not a multiple of " + size_text(a.misaligned_chunks.front()) +
                               ": clusters straddle the storage's chunks, so every IO touches two and dedup "
                               "never matches; realign the partition (e.g. restore into a disk partitioned at "
                               "1 MiB) before defragmenting"});
        } else if (!a.aligned_1mib) {
            out.push_back({"MISALIGNED_PARTITION", Severity::Info, a.length,
                           "partition " + std::to_string(a.partition) + " starts at byte " + std::to_string(a.start) +
                               ", aligned to the dedup chunks but not to the 1 MiB convention"});
        }
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const ImpactWarning& a, const ImpactWarning& b) { return a.severity > b.severity; });
    return out;
}

}  // namespace guestfrag
