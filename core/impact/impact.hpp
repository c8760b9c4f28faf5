// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/image/host_layout.hpp"
#include "core/impact/plan_writes.hpp"
#include "core/model/volume_map.hpp"
#include "core/partition/partition.hpp"
#include "core/plan/growth.hpp"
#include "core/plan/plan.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// What a plan would do to the storage under the guest, before anyone moves a cluster
/// (docs/design.md §5). Every figure is in bytes of the virtual disk and has its formula in
/// docs/impact.md; the section numbers below refer to it.

enum class Severity : std::uint8_t { Info, Warning, Critical };
/// "info", "warning", "critical".
[[nodiscard]] std::string_view severity_name(Severity severity) noexcept;

/// One risk, with the bytes at stake and what to do instead (docs/design.md §5 codes, docs/impact.md §8).
struct ImpactWarning {
    std::string code;  ///< "THIN_GROWTH", "CLONE_DELTA_GROWTH", "DEDUP_LOSS", ...
    Severity severity = Severity::Info;
    std::uint64_t bytes = 0;
    std::string message;

    friend bool operator==(const ImpactWarning&, const ImpactWarning&) = default;
};

/// §4: content-addressed chunks of `chunk` bytes aligned to disk offset 0.
struct DedupFigures {
    std::uint64_t chunk = 0;
    /// Chunks the plan writes into (any destination byte inside them).
    std::uint64_t changed_chunks = 0;
    /// Set with ImpactOptions::deep: real content hashes of the whole disk before and after.
    struct Deep {
        std::uint64_t chunks = 0;            ///< chunks of the disk (the last may be short)
        std::uint64_t rewritten_chunks = 0;  ///< chunks whose content differs after the plan
        std::uint64_t unique_before = 0;     ///< distinct chunk contents before
        std::uint64_t unique_after = 0;
        [[nodiscard]] double ratio_before() const { return unique_before ? double(chunks) / double(unique_before) : 0; }
        [[nodiscard]] double ratio_after() const { return unique_after ? double(chunks) / double(unique_after) : 0; }

        friend bool operator==(const Deep&, const Deep&) = default;
    };
    std::optional<Deep> deep;

    friend bool operator==(const DedupFigures&, const DedupFigures&) = default;
};

/// §3: what a snapshot, CBT or replication product tracking writes at `granularity` sees.
struct SnapshotDelta {
    std::uint64_t granularity = 0;
    std::string tracker;  ///< "seSparse snapshot", "CBT / VDDK", "user"
    std::uint64_t bytes = 0;

    friend bool operator==(const SnapshotDelta&, const SnapshotDelta&) = default;
};

/// §5: Volume Shadow Copy state of the volume.
struct VssFigures {
    bool catalog = false;             ///< System Volume Information holds the VSS catalog
    std::uint64_t store_files = 0;    ///< shadow copy diff-area files
    std::vector<std::string> store_names;  ///< their names, in System Volume Information, by record
    std::uint64_t store_bytes = 0;    ///< their allocated bytes
    std::uint32_t cluster_size = 0;
    /// Store files present and clusters under 16 KiB: Windows copies every moved cluster's
    /// old contents into the diff area (§5).
    bool copy_on_write = false;
    std::uint64_t copy_on_write_bytes = 0;

    friend bool operator==(const VssFigures&, const VssFigures&) = default;
};

/// §6: one partition's start against the 1 MiB convention and each dedup chunk size.
struct AlignmentFigures {
    int partition = 0;
    std::uint64_t start = 0;
    std::uint64_t length = 0;
    bool aligned_1mib = false;
    std::vector<std::uint64_t> misaligned_chunks;  ///< chunk sizes the start is not a multiple of

    friend bool operator==(const AlignmentFigures&, const AlignmentFigures&) = default;
};

/// §7: linked clones. Bytes of the volume's in-use clusters the top layer reads through
/// from its parents, and how many of those the plan copies up into the top layer.
struct CloneFigures {
    int parent_layers = 0;
    std::uint64_t shared_bytes = 0;
    std::uint64_t sharing_lost_bytes = 0;

    friend bool operator==(const CloneFigures&, const CloneFigures&) = default;
};

/// §9: where the top layer's file keeps the volume's data, before and after the plan.
struct HostFigures {
    HostLayout before;
    HostLayout after;
    std::uint64_t new_bytes = 0;  ///< growth units the plan newly allocates in the top layer
    bool in_place = false;        ///< raw: they land at their own offset, not at the file's end

    friend bool operator==(const HostFigures&, const HostFigures&) = default;
};

/// §9: the top layer as the plan would leave it. Every growth unit the plan newly
/// allocates there is placed as the container places a new block: appended to the end of
/// its file (for a multi-file VMDK, the sparse extent file holding its offset), in the
/// order the moves first write it; in a raw file or a VMDK's FLAT extent at its own place.
struct LayerAfterPlan {
    Layer layer;                  ///< `top` with those units stored (and no longer zero)
    std::uint64_t new_bytes = 0;  ///< the units' bytes
    bool in_place = false;        ///< every file writes in place (raw, FLAT extents only)
};

/// The after-layout of `top` (the image's top layer) under `plan` for `volume`.
/// O(top's host extents and allocated intervals + moves · log moves + new units, · log for
/// a layer that appends).
[[nodiscard]] LayerAfterPlan top_layer_after_plan(const Layer& top, const VolumeMap& volume,
                                                  const Plan& plan);

/// Everything `guestfrag impact` prints for one plan.
struct Impact {
    int partition = 0;
    std::uint64_t granule_size = 0;    ///< granule of the growth and reclaimable figures
    std::uint64_t moved_bytes = 0;     ///< Σ move clusters · cluster size
    std::uint64_t written_bytes = 0;   ///< bytes of distinct destination clusters (§2)
    GrowthFigures growth;              ///< §1, identical to the plan summary's
    std::uint64_t reclaimable_bytes_before = 0;
    std::uint64_t reclaimable_bytes_after = 0;
    /// What the plan frees for reclaim in the top layer: after − before, at least 0.
    [[nodiscard]] std::uint64_t freed_bytes() const noexcept {
        return reclaimable_bytes_after > reclaimable_bytes_before
                   ? reclaimable_bytes_after - reclaimable_bytes_before
                   : 0;
    }
    std::string reclaim_how;           ///< what hands reclaimable space back for this format
    std::vector<SnapshotDelta> snapshot;
    /// §3: the next incremental backup after the plan, reading its CBT delta: every 64 KiB
    /// block holding a byte the plan writes, in disk order, blocks that follow each other
    /// read together in reads of at most kDefaultMaxIo; on ImpactOptions::models.
    IoStats backup_delta_reads;
    std::vector<DedupFigures> dedup;
    /// §4: with ImpactOptions::dedup_rescan_chunk, a post-process deduplicator scanning the
    /// chunks the plan writes into again, read as the backup reads its blocks (§3).
    std::optional<IoStats> dedup_rescan_reads;
    VssFigures vss;
    std::vector<AlignmentFigures> alignment;  ///< every partition of the disk
    CloneFigures clone;
    HostFigures host;
    PlanWrites plan_writes;                   ///< §10: the plan's own IO on the storage
    std::vector<ImpactWarning> warnings;      ///< most severe first
};

/// Throws Error(Unsupported) unless `chunk` is a dedup chunk size impact takes: a power of
/// two from 512 B to 64 MiB.
void check_dedup_chunk(std::uint64_t chunk);

struct ImpactOptions {
    /// Dedup chunk sizes, bytes, each a power of two ≥ 512.
    std::vector<std::uint64_t> dedup_chunks = {4096, 8192, 16384, 32768};
    /// §4: the chunk of a post-process deduplicator the storage runs, whose re-scan of the
    /// chunks written is timed (Impact::dedup_rescan_reads); unset: none is.
    std::optional<std::uint64_t> dedup_rescan_chunk;
    /// An extra snapshot/replication granularity (bytes) beside 4 KiB and 64 KiB.
    std::optional<std::uint64_t> snapshot_granularity;
    /// Granule of growth and reclaimable figures; 0: the top layer's (as `plan --granule`).
    std::uint64_t granule = 0;
    /// Hash the whole disk before and after (§4, deep).
    bool deep = false;
    /// Cap on the deep pass's image reads, bytes per second (0: unlimited).
    std::uint64_t read_rate = 0;
    /// §10: the device models the plan's own IO is timed on.
    DeviceModels models;
    /// §10: the top layer's provisioning its first writes are counted with; unset: the
    /// detected one (Layer::provisioning), as `estimate` without --provisioning.
    std::optional<LayerProvisioning> provisioning;
};

/// The impact of `plan` (checked against `before` by apply_plan) on `image`, whose partition
/// table is `table` and whose volume `before` the plan was made for. Reads the image only
/// with options.deep (then progress is reported in bytes read and may cancel). Throws
/// Error(Corrupt) for a plan that does not apply, Error(Unsupported) for a bad chunk size,
/// and the image's read errors. Cost: O(moves · log + layer intervals); deep: one
/// sequential read of the disk, memory 16 bytes per non-zero chunk per chunk size.
[[nodiscard]] Impact assess_impact(const DiskImage& image, const PartitionTable& table, const VolumeMap& before,
                                   const Plan& plan, const ImpactOptions& options = {},
                                   const Progress& progress = {});

/// As above for a plan already applied to `before` and summarised: `summary` is
/// summarize_plan(before, apply_plan(before, plan), image.layers(), options.granule, plan).
/// Saves the caller who holds them (a planned volume) a second apply and summary, a third
/// of the cost on a million streams. Throws as above, except that the plan is not checked.
[[nodiscard]] Impact assess_impact(const DiskImage& image, const PartitionTable& table, const VolumeMap& before,
                                   const Plan& plan, const PlanSummary& summary,
                                   const ImpactOptions& options = {}, const Progress& progress = {});

}  // namespace guestfrag
