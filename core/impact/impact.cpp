// SPDX-License-Identifier: GPL-2.0-or-later
// assess_impact: the figures of docs/impact.md §1–7, §9 and §10 for one plan.
#include "core/impact/impact.hpp"

#include <algorithm>
#include <bit>
#include <iterator>
#include <numeric>
#include <queue>
#include <utility>

#include "core/error.hpp"
#include "core/impact/content_map.hpp"
#include "core/impact/deep_dedup.hpp"
#include "core/impact/vss.hpp"
#include "core/impact/warnings.hpp"
#include "core/io/heap.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/planner.hpp"

namespace guestfrag {

namespace {

using Bytes = ByteSet::interval_type;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
/// Volume Shadow Copy tracks changes in 16 KiB blocks of the volume.
constexpr std::uint64_t kVssBlock = 16 * 1024;

std::vector<std::uint64_t> checked_chunks(std::vector<std::uint64_t> chunks) {
    for (const std::uint64_t c : chunks) check_dedup_chunk(c);
    std::sort(chunks.begin(), chunks.end());
    chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
    return chunks;
}

std::uint64_t granule_bytes(const ByteSet& bytes, std::uint64_t granule) {
    return boost::icl::length(whole_granules_touching(bytes, granule));
}

/// §3: what a backup reading the blocks of `granule` bytes that hold `written` costs on
/// `models`: the blocks in disk order, those that follow each other in one read of at most
/// kDefaultMaxIo bytes (a backup reads its changed blocks as the storage serves them).
IoStats granule_reads(const ByteSet& written, std::uint64_t granule, const DeviceModels& models) {
    IoSummary summary(models);
    for (const auto& run : whole_granules_touching(written, granule))
        for (std::uint64_t at = run.lower(); at < run.upper();) {
            const std::uint64_t n = std::min<std::uint64_t>(kDefaultMaxIo, run.upper() - at);
            summary.add(Io{static_cast<std::int64_t>(at / kSectorBytes), n, false});
            at += n;
        }
    return summary.stats();
}

/// What hands NTFS-free but allocated space back, per container format (docs/impact.md §1).
std::string reclaim_advice(ImageFormat format) {
    switch (format) {
        case ImageFormat::Qcow2:
            return "TRIM in the guest (Optimize-Volume -ReTrim) with discard=unmap on the virtual disk, or "
                   "zero the free space in the guest (sdelete -z) and rewrite the image with `qemu-img "
                   "convert -O qcow2`";
        case ImageFormat::Vmdk:
            return "TRIM in the guest (Optimize-Volume -ReTrim) on a thin disk of ESXi 6.5 or later, or zero "
                   "the free space in the guest (sdelete -z) and punch it out with `vmkfstools -K` (ESXi) or "
                   "`vmware-vdiskmanager -k` (hosted)";
        case ImageFormat::Vhd:
        case ImageFormat::Vhdx:
            return "TRIM in the guest (Optimize-Volume -ReTrim), then `Optimize-VHD -Mode Full` on the host";
        default:
            return "TRIM in the guest (Optimize-Volume -ReTrim) with discard passed to the host file, or "
                   "zero the free space in the guest (sdelete -z) and punch holes with "
                   "`fallocate --dig-holes`";
    }
}

/// Bytes of `bytes` inside the volume's in-use clusters.
ByteSet in_use(const VolumeMap& volume, ByteSet bytes) {
    const std::uint64_t cs = volume.cluster_size;
    const std::uint64_t po = volume.partition_offset;
    bytes &= Bytes::right_open(po, po + static_cast<std::uint64_t>(volume.total_clusters) * cs);
    for (const auto& f : volume.free)
        bytes -= Bytes::right_open(po + static_cast<std::uint64_t>(f.lower()) * cs,
                                   po + static_cast<std::uint64_t>(f.upper()) * cs);
    return bytes;
}

CloneFigures clone_figures(const VolumeMap& volume, const std::vector<Layer>& layers, const ContentMap& content) {
    CloneFigures out;
    if (layers.size() < 2) return out;
    out.parent_layers = static_cast<int>(layers.size()) - 1;
    // Read through from a parent: a parent has the byte and the top layer does not.
    ByteSet shared;
    for (std::size_t i = 1; i < layers.size(); ++i) shared += layers[i].allocated;
    shared -= layers.front().allocated;
    out.shared_bytes = boost::icl::length(in_use(volume, shared));
    out.sharing_lost_bytes = boost::icl::length(content.read() & shared);
    return out;
}

std::vector<AlignmentFigures> alignment_figures(const PartitionTable& table, const std::vector<std::uint64_t>& chunks) {
    std::vector<AlignmentFigures> out;
    for (const Partition& p : table.partitions) {
        AlignmentFigures a;
        a.partition = p.number;
        a.start = p.start;
        a.length = p.length;
        a.aligned_1mib = p.start % kMiB == 0;
        for (const std::uint64_t c : chunks)
            if (p.start % c != 0) a.misaligned_chunks.push_back(c);
        out.push_back(std::move(a));
    }
    return out;
}

/// Source bytes rounded out to VSS's 16 KiB blocks, counted from the volume's start.
std::uint64_t vss_copy_bytes(const VolumeMap& volume, const ContentMap& content) {
    ByteSet relative;
    for (const auto& r : content.read())
        relative.add(Bytes::right_open(r.lower() - volume.partition_offset, r.upper() - volume.partition_offset));
    return granule_bytes(relative, kVssBlock);
}

/// §9: the top layer's file before and after the plan, over the volume's bytes.
HostFigures host_figures(const Layer& top, const VolumeMap& volume, const Plan& plan) {
    const std::uint64_t begin = volume.partition_offset;
    const std::uint64_t end = begin + static_cast<std::uint64_t>(volume.total_clusters) * volume.cluster_size;
    const LayerAfterPlan after = top_layer_after_plan(top, volume, plan);
    HostFigures out;
    out.before = analyze_host_layout(top, begin, end);
    out.after = analyze_host_layout(after.layer, begin, end);
    out.new_bytes = after.new_bytes;
    out.in_place = after.in_place;
    return out;
}

/// The units of `unit` bytes that the plan's moves write and `held` lacks, in disk order, each
/// as {offset, the first move writing it (in file_offset), unit, 0}. Found in disk order: a
/// lookup per unit in the plan's order would be a descent at a random place, a cache miss
/// at every level on ten million moves.
std::vector<HostExtent> units_written_new(const ByteSet& held, std::uint64_t unit, const VolumeMap& volume,
                                          const Plan& plan) {
    const std::uint64_t cs = volume.cluster_size;
    const std::uint64_t begin = volume.partition_offset;
    // A region is the units one move writes, or a run of moves each writing on from where
    // the one before ended; it keeps its first move.
    struct Region {
        std::uint64_t lo = 0;  // units [lo, hi) of the disk
        std::uint64_t hi = 0;
        std::size_t move = 0;
    };
    std::vector<Region> regions;
    std::uint64_t last_end = 0;  // where the previous move's destination ended, in bytes
    for (std::size_t i = 0; i < plan.moves.size(); ++i) {
        const Move& m = plan.moves[i];
        if (m.clusters <= 0) continue;
        const std::uint64_t lo = begin + static_cast<std::uint64_t>(m.to_lcn) * cs;
        const std::uint64_t hi = lo + static_cast<std::uint64_t>(m.clusters) * cs;
        const std::uint64_t end = (hi + unit - 1) / unit * unit;
        if (!regions.empty() && lo == last_end)
            regions.back().hi = std::max(regions.back().hi, end);
        else
            regions.push_back({lo / unit * unit, end, i});
        last_end = hi;
    }
    std::ranges::sort(regions, {}, &Region::lo);
    // A unit belongs to the earliest move among the regions over it: they are swept with
    // the open ones in a heap on their move (an ended one leaves it when it comes to the top).
    const auto later = [](const Region& a, const Region& b) { return a.move > b.move; };
    std::priority_queue<Region, std::vector<Region>, decltype(later)> open(later);
    std::vector<HostExtent> added;
    auto held_at = held.begin();
    std::uint64_t at = 0;
    for (std::size_t next = 0; next < regions.size() || !open.empty();) {
        if (open.empty()) at = std::max(at, regions[next].lo);
        while (next < regions.size() && regions[next].lo <= at) open.push(regions[next++]);
        while (!open.empty() && open.top().hi <= at) open.pop();
        if (open.empty()) continue;
        const std::uint64_t end =
            next < regions.size() ? std::min(open.top().hi, regions[next].lo) : open.top().hi;
        for (std::uint64_t g = at; g < end;) {
            while (held_at != held.end() && boost::icl::last_next(*held_at) <= g) ++held_at;
            if (held_at != held.end() && boost::icl::first(*held_at) <= g) {
                g = boost::icl::last_next(*held_at);  // held spans whole units
                continue;
            }
            added.push_back({g, open.top().move, unit, 0});
            g += unit;
        }
        at = end;
    }
    return added;
}

}  // namespace

LayerAfterPlan top_layer_after_plan(const Layer& top, const VolumeMap& volume, const Plan& plan) {
    const std::vector<LayerFileSpan>& spans = top.file_spans;
    LayerAfterPlan out;
    out.in_place = spans.empty() ? top.format == ImageFormat::Raw
                                 : std::all_of(spans.begin(), spans.end(), [](const LayerFileSpan& f) {
                                       return f.in_place_offset.has_value();
                                   });
    const std::uint64_t unit = std::max<std::uint64_t>(top.growth_granule(), 1);
    const ByteSet held = whole_granules_touching(top.allocated, unit);
    // Each file appends what is written new at its end, except a raw file and a VMDK's FLAT
    // extents, which hold every byte at its own place.
    std::vector<std::uint64_t> file_end(std::max<std::size_t>(spans.size(), 1), 0);
    for (const HostExtent& e : top.host_extents) {
        if (file_end.size() <= e.file) file_end.resize(std::size_t{e.file} + 1, 0);
        file_end[e.file] = std::max(file_end[e.file], e.file_offset + e.length);
    }
    const auto place = [&](std::uint64_t offset) -> HostExtent {
        if (spans.empty()) {
            if (top.format == ImageFormat::Raw) return {offset, offset, unit, 0};
            return {offset, std::exchange(file_end[0], file_end[0] + unit), unit, 0};
        }
        const auto next =
            std::upper_bound(spans.begin(), spans.end(), offset,
                             [](std::uint64_t v, const LayerFileSpan& f) { return v < f.start; });
        const auto file = static_cast<std::uint32_t>(next == spans.begin() ? 0 : next - spans.begin() - 1);
        const LayerFileSpan& span = spans[file];
        if (span.in_place_offset) return {offset, *span.in_place_offset + (offset - span.start), unit, file};
        return {offset, std::exchange(file_end[file], file_end[file] + unit), unit, file};
    };
    std::vector<HostExtent> added = units_written_new(held, unit, volume, plan);
    out.new_bytes = added.size() * unit;
    if (out.in_place) {
        for (HostExtent& e : added) e = place(e.virtual_offset);
    } else {
        // Appended in the order the moves first write them, and within a move by offset.
        std::vector<std::size_t> order(added.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::ranges::stable_sort(order, {}, [&](std::size_t k) { return added[k].file_offset; });
        for (const std::size_t k : order) added[k] = place(added[k].virtual_offset);
    }
    ByteSet added_bytes;
    for (const HostExtent& e : added)
        added_bytes.add(added_bytes.end(), Bytes::right_open(e.virtual_offset, e.virtual_offset + unit));
    // The after-layer: the stored extents and the new units, in disk order (they never
    // overlap: a new unit holds no stored byte).
    Layer& after = out.layer;
    after.depth = top.depth;
    after.path = top.path;
    after.format = top.format;
    after.granule_size = top.granule_size;
    after.growth_unit = unit;
    after.allocated = top.allocated + added_bytes;
    after.zero = top.zero - added_bytes;
    after.file_spans = top.file_spans;
    after.warnings = top.warnings;
    const auto in_disk_order = [](const HostExtent& a, const HostExtent& b) {
        return a.virtual_offset < b.virtual_offset;
    };
    std::vector<HostExtent> merged;
    merged.reserve(top.host_extents.size() + added.size());
    std::merge(top.host_extents.begin(), top.host_extents.end(), added.begin(), added.end(),
               std::back_inserter(merged), in_disk_order);
    for (const HostExtent& e : merged) append_host_extent(after.host_extents, e);
    return out;
}

std::string_view severity_name(Severity severity) noexcept {
    switch (severity) {
        case Severity::Info: return "info";
        case Severity::Warning: return "warning";
        case Severity::Critical: return "critical";
    }
    return "info";
}

Impact assess_impact(const DiskImage& image, const PartitionTable& table, const VolumeMap& before, const Plan& plan,
                     const ImpactOptions& options, const Progress& progress) {
    const VolumeMap after = apply_plan(before, plan);
    // The plan's own summary: impact never contradicts what `plan` printed.
    return assess_impact(image, table, before, plan,
                         summarize_plan(before, after, image.layers(), options.granule, plan), options, progress);
}

Impact assess_impact(const DiskImage& image, const PartitionTable& table, const VolumeMap& before, const Plan& plan,
                     const PlanSummary& summary, const ImpactOptions& options, const Progress& progress) {
    const std::vector<std::uint64_t> chunks = checked_chunks(options.dedup_chunks);
    if (options.dedup_rescan_chunk) check_dedup_chunk(*options.dedup_rescan_chunk);
    if (options.snapshot_granularity && *options.snapshot_granularity == 0)
        throw Error(ErrorKind::Unsupported, "snapshot granularity must be at least one byte");
    const std::vector<Layer>& layers = image.layers();

    Impact out;
    out.partition = before.partition;
    out.granule_size = summary.granule_size;
    out.moved_bytes = summary.moved_bytes;
    out.growth = {summary.thin_growth_bytes, summary.clone_delta_growth_bytes};
    out.reclaimable_bytes_before = summary.reclaimable_bytes_before;
    out.reclaimable_bytes_after = summary.reclaimable_bytes_after;
    out.reclaim_how = reclaim_advice(image.format());
    out.alignment = alignment_figures(table, chunks);
    out.vss = find_shadow_copies(before);
    out.vss.copy_on_write = out.vss.store_files > 0 && before.cluster_size < kVssBlock;

    {
        // The disk as the plan leaves it, a B-tree entry a move (14 MB more resident at a
        // million moves; std::map's nodes took 59 MB), serves these figures only: it is gone
        // before the host layout and the first writes are worked out.
        const ContentMap content(before, plan);
        out.written_bytes = boost::icl::length(content.written());
        out.snapshot.push_back({4096, "seSparse snapshot", granule_bytes(content.written(), 4096)});
        out.snapshot.push_back({64 * 1024, "CBT / VDDK", granule_bytes(content.written(), 64 * 1024)});
        out.backup_delta_reads = granule_reads(content.written(), 64 * 1024, options.models);
        if (options.dedup_rescan_chunk)
            out.dedup_rescan_reads =
                granule_reads(content.written(), *options.dedup_rescan_chunk, options.models);
        if (options.snapshot_granularity)
            out.snapshot.push_back({*options.snapshot_granularity, "user",
                                    granule_bytes(content.written(), *options.snapshot_granularity)});

        for (const std::uint64_t c : chunks) out.dedup.push_back({c, granule_bytes(content.written(), c) / c, {}});
        if (options.deep) {
            RateLimiter limiter(options.read_rate);
            const std::vector<DedupFigures::Deep> deep = deep_dedup(image, content, chunks, limiter, progress);
            for (std::size_t i = 0; i < deep.size(); ++i) out.dedup[i].deep = deep[i];
        }
        if (out.vss.copy_on_write) out.vss.copy_on_write_bytes = vss_copy_bytes(before, content);
        out.clone = clone_figures(before, layers, content);
    }
    // The content map's nodes and the replay's tables before it, handed back: the host
    // layout's tables came on top of them (23 MB over optimize's peak at a million moves).
    release_freed_memory();
    if (!layers.empty()) {
        out.host = host_figures(layers.front(), before, plan);
        // Writes go to the top layer: its provisioning and written map decide first writes.
        const LayerProvisioning provisioning = options.provisioning.value_or(layers.front().provisioning);
        const WrittenMap written = WrittenMap::from_layer(layers.front(), provisioning.zero_block);
        out.plan_writes = assess_plan_writes(before, plan, written, provisioning, options.models);
    }
    out.warnings = impact_warnings(out, image);
    return out;
}

void check_dedup_chunk(std::uint64_t chunk) {
    if (chunk < 512 || chunk > 64 * kMiB || !std::has_single_bit(chunk))
        throw Error(ErrorKind::Unsupported, "dedup chunk size " + std::to_string(chunk) +
                                                " is not a power of two between 512 B and 64 MiB");
}

}  // namespace guestfrag
