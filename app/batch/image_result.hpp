// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/fragmentation.hpp"
#include "core/image/host_layout.hpp"
#include "core/impact/impact.hpp"
#include "core/model/free_space.hpp"
#include "core/plan/plan.hpp"
#include "pipeline/apply.hpp"

namespace guestfrag::batch {

/// What identifies an image's content cheaply: a changed image changes at least one.
struct Fingerprint {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::string header_hash;  ///< XXH3-64 of the first 64 KiB, 16 hex digits

    friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};

/// One volume's figures as the batch keeps them (the VolumeMap itself is not kept).
struct VolumeResult {
    int partition = 0;
    std::uint64_t start = 0;
    std::uint64_t length = 0;
    std::uint32_t cluster_size = 0;
    std::int64_t total_clusters = 0;
    std::int64_t free_clusters = 0;
    std::string label;
    std::uint64_t serial = 0;
    std::uint64_t mft_records_in_use = 0;
    FileFragmentation files;
    FreeSpaceFragmentation free_space;
    std::uint64_t reclaimable_bytes = 0;  ///< top layer, in its growth unit (docs/metrics.md §6)
    HostLayout host;                      ///< top layer's file over this volume (docs/metrics.md §6)
    /// With `batch --plan`: the plan's strategy, summary and guestfrag.plan.v1 text, and its
    /// own IO (docs/impact.md §10) on the top layer's provisioning: IOs, first writes and the
    /// device time on each model.
    struct PlanResult {
        std::string strategy;
        PlanSummary summary;
        std::string json;
        std::uint64_t ios = 0;
        std::uint64_t first_writes = 0;
        DeviceSeconds seconds;
    };
    std::optional<PlanResult> plan;
    std::vector<ImpactWarning> warnings;  ///< with `batch --plan`
    /// With `batch --verdict`: the verdict on the volume (docs/verdict.md) with report's
    /// defaults and the batch's device models.
    struct VerdictResult {
        std::string device;    ///< the model decided on: "array"
        std::string workload;  ///< "scan"
        double now_seconds = 0;
        /// The plan chosen ("" for no action): its strategy, placement order ("" when it
        /// takes none), the seconds it saves, its own IO and the storage work it causes
        /// once (docs/verdict.md §2) on `device`, its growth and the bytes it moves.
        std::string strategy;
        std::string order;
        double saved_seconds = 0;
        double plan_io_seconds = 0;
        double work_seconds = 0;
        std::uint64_t growth_bytes = 0;
        std::uint64_t moved_bytes = 0;
        std::string reason;  ///< why this plan, why no action, or "no verdict: REASON"
        std::vector<std::string> blockers;
    };
    std::optional<VerdictResult> verdict;
};

/// With `batch --apply-to`: what applying the image's plan did, or why it failed
/// (docs/batch.md, table `applies`).
struct ApplyRecord {
    std::string output;         ///< the file written, or that would have been
    std::string output_format;  ///< "raw" or "qcow2"
    std::optional<int> partition;  ///< the volume applied; none when there was no single one
    bool ok = false;
    std::string error;  ///< one line, when !ok
    std::size_t moves_planned = 0;
    std::size_t moves_done = 0;
    std::map<std::string, std::size_t> skipped_by_reason;  ///< moves skipped, by reason
    std::uint64_t bytes_moved = 0;         ///< cluster bytes the moves copied
    std::uint64_t disk_bytes_written = 0;  ///< data bytes the output holds
    std::uint64_t output_file_bytes = 0;
    std::optional<ApplyVerification> verification;  ///< none with --no-verify (or when !ok)
    double seconds = 0;

    [[nodiscard]] std::size_t moves_skipped() const {
        std::size_t n = 0;
        for (const auto& [reason, count] : skipped_by_reason) n += count;
        return n;
    }
};

/// With `batch --compact-to`: what compacting the image did, or why it failed (docs/batch.md,
/// table `compactions`). Moves and proofs are summed over the disk's NTFS volumes; granules
/// and host bytes are CompactResult's.
struct CompactRecord {
    std::string output;         ///< the file written, or that would have been
    std::string output_format;  ///< "raw", "qcow2", "vmdk" or "vhdx"
    bool ok = false;
    std::string error;          ///< one line, when !ok
    std::uint64_t granule = 0;  ///< bytes
    bool packed = true;
    std::size_t volumes = 0;
    std::size_t moves_planned = 0;
    std::size_t moves_done = 0;
    std::size_t moves_skipped = 0;
    std::uint64_t bytes_moved = 0;
    std::uint64_t granules_input = 0;
    std::uint64_t granules_sparsified = 0;
    std::uint64_t granules_packed = 0;
    std::uint64_t granules_output = 0;
    std::uint64_t host_bytes_input = 0;
    std::uint64_t host_bytes_output = 0;
    std::uint64_t data_bytes_output = 0;
    std::uint64_t output_file_bytes = 0;
    bool verified = false;             ///< every volume proved (false with --no-verify)
    std::uint64_t streams_hashed = 0;  ///< over the volumes, when verified
    double seconds = 0;
};

/// The outcome of one image of a batch: its figures, or why it failed.
struct ImageResult {
    std::string path;  ///< absolute
    Fingerprint fingerprint;
    bool ok = false;
    /// One line, when !ok ("apply: ..." or "compact: ..." when the analysis passed and what
    /// followed it failed)
    std::string error;
    std::string format;
    std::uint64_t virtual_size = 0;
    int layers = 0;
    std::uint64_t allocated_bytes = 0;  ///< top layer
    /// Offload commands of a full copy now at 4 and 16 MiB transfers (docs/copy.md §2):
    /// `analyze`'s image.copy.chain.
    std::uint64_t copy_commands_4m = 0;
    std::uint64_t copy_commands_16m = 0;
    /// The same for the data re-laid contiguously (a clone or convert of it).
    std::uint64_t copy_relaid_commands_4m = 0;
    std::uint64_t copy_relaid_commands_16m = 0;
    /// The mount point of the file system that holds the image (image_list.hpp's
    /// mount_point_of), the unit the fleet view groups by.
    std::string datastore;
    std::vector<VolumeResult> volumes;  ///< also when only the apply failed
    std::optional<ApplyRecord> apply;   ///< with `batch --apply-to`, once the image was analysed
    std::optional<CompactRecord> compact;  ///< with `batch --compact-to`, once the image was analysed
    std::uint64_t bytes_read = 0;  ///< image bytes read to produce this result
    double seconds = 0;
};

}  // namespace guestfrag::batch
