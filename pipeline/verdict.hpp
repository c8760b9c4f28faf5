// SPDX-License-Identifier: GPL-2.0-or-later
// The verdict (docs/verdict.md): whether to defragment a volume, with which plan, what it
// buys the guest and what it costs the storage, and whether it can run offline now. One
// decision for every front end: report, analyze --check, the GUI and batch call this.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/workload.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag {

/// The device model a verdict weighs seconds on.
enum class DecisionDevice { Hdd, Ssd, Array };

/// "hdd", "ssd", "array".
[[nodiscard]] std::string_view device_name(DecisionDevice device) noexcept;
/// The device of a name device_name gives, nullopt for another text.
[[nodiscard]] std::optional<DecisionDevice> parse_device(std::string_view name) noexcept;
/// `seconds`' figure for `device`.
[[nodiscard]] double on_device(const DeviceSeconds& seconds, DecisionDevice device) noexcept;

struct VerdictOptions {
    /// What the guest does: docs/verdict.md argues `scan` (every file read in MFT order).
    Workload workload = parse_workload("scan");
    /// Where the seconds are weighed: the array (guest disks live on shared storage).
    DecisionDevice device = DecisionDevice::Array;
    DeviceModels models;
    /// How the guest reads (docs/estimate.md §1.1): a Windows guest unless told.
    GuestProfile guest = default_guest_profile();
    /// The top layer's provisioning for first writes; nullopt: the detected one.
    std::optional<LayerProvisioning> provisioning;
    /// Only this strategy (and, for one that takes one, only this order) is weighed.
    std::optional<Strategy> strategy;
    std::optional<PlacementOrder> order;
    /// The storage deduplicates after the fact in chunks of this many bytes: a plan's work
    /// adds the re-scan of the chunks it writes (docs/verdict.md §2); unset: it does not.
    std::optional<std::uint64_t> dedup_chunk;
    /// A plan must save at least this many seconds of the workload on the device, and this
    /// share of its time ...
    double min_gain_seconds = 0.1;
    double min_gain_share = 0.05;
    /// ... and the storage work it causes once (its own IO, the next backup's delta, the
    /// next full copy's extra reads, a deduplicator's re-scan) must be repaid by at most this
    /// many runs ...
    double payback_runs = 30;
    /// ... and it must grow the storage, net of what it frees, by less than this share of
    /// the virtual disk (the share at which impact calls growth critical).
    double max_growth_share = 0.1;
};

/// One plan the verdict weighed.
struct WeighedPlan {
    PlanOptions options;
    PlannedVolume planned;
    VolumeEstimate estimate;
    DeviceSeconds saved;             ///< the workload's seconds before − after, per device
    Impact impact;                   ///< plan_impact's, with the verdict's models and provisioning
    DeviceSeconds plan_io;           ///< the plan's own IO (impact's plan_writes), per device
    /// The next incremental backup's read of the plan's CBT delta (impact's
    /// backup_delta_reads), per device.
    DeviceSeconds backup_reads;
    /// What the next full copy of the image (a clone, a Storage vMotion, `qemu-img
    /// convert`) reads for longer after the plan than now, host-side (docs/copy.md §4, §7),
    /// at least 0 on each device.
    DeviceSeconds copy_added;
    /// With VerdictOptions::dedup_chunk: the deduplicator's re-scan of the chunks the plan
    /// writes (impact's dedup_rescan_reads), per device; 0 otherwise.
    DeviceSeconds dedup_rescan;
    /// The storage's work the plan causes once: plan_io + backup_reads + copy_added +
    /// dedup_rescan. The rule's payback weighs this.
    [[nodiscard]] DeviceSeconds storage_work() const noexcept {
        return {plan_io.hdd + backup_reads.hdd + copy_added.hdd + dedup_rescan.hdd,
                plan_io.ssd + backup_reads.ssd + copy_added.ssd + dedup_rescan.ssd,
                plan_io.array + backup_reads.array + copy_added.array + dedup_rescan.array};
    }
    /// What the plan adds to the storage: thin growth (when the top layer is thin, as
    /// detected or as --provisioning says) + clone delta growth.
    std::uint64_t growth_bytes = 0;
    /// Top-layer space the plan frees for reclaim (reclaimable after − before, on a thin top
    /// layer): what TRIM, a sparsifier or `compact` gives back afterwards.
    std::uint64_t freed_bytes = 0;
    /// growth_bytes − freed_bytes, at least 0: what the storage keeps once the freed space
    /// is reclaimed. The rule weighs this.
    [[nodiscard]] std::uint64_t net_growth_bytes() const noexcept {
        return growth_bytes > freed_bytes ? growth_bytes - freed_bytes : 0;
    }
    /// Why the rule leaves it out ("" when it passes): it saves too little, is slower than
    /// now, the storage work it causes is not repaid, or it grows the storage too much.
    std::string rejected;
    /// Why it could not be planned ("" when it was): its rehearsal found a move apply would
    /// not carry out (Error(Unfinished) from plan_volume). Such a plan is left out whatever
    /// it would save, and the other candidates are still weighed.
    std::string failure;
};

struct Verdict {
    int partition = 0;
    DecisionDevice device = DecisionDevice::Array;
    Workload workload;
    GuestProfile guest;                 ///< how the workload's reads reached the disk
    double now_seconds = 0;             ///< the workload on the device, as the volume is
    std::uint64_t disk_bytes = 0;       ///< the virtual disk's size, growth is weighed against
    /// NTFS-free space a thin top layer holds now (docs/impact.md §1, reclaimable before):
    /// what `compact` leaves out and TRIM gives back, plan or not; 0 on a thick one.
    std::uint64_t reclaimable_bytes = 0;
    std::vector<WeighedPlan> plans;     ///< every candidate, in the order weighed
    std::optional<std::size_t> chosen;  ///< into plans; nullopt: no action
    std::string reason;                 ///< one line: why this plan, or why no action
    /// Why the workload asked for could not be replayed on this volume (a trace read from
    /// the image, @prefetch or @layout, that the volume lacks), when the verdict weighs the
    /// default `scan` instead; "" otherwise.
    std::string fallback;
    /// What keeps an offline run from starting now (one line each): an unclean, dirty or
    /// hibernated volume, shadow copies, another process writing the image.
    std::vector<std::string> blockers;
};

/// The rule of docs/verdict.md §2 over `v.plans` (their saved seconds, own IO, moves and
/// growth), `v.now_seconds` and `v.disk_bytes`: sets each plan's `rejected`, `v.chosen` and `v.reason`.
/// O(plans).
void weigh(Verdict& v, const VerdictOptions& options);

/// The candidates for volume `volume` of `opened`: every strategy (with the order its
/// default takes and the order the workload reads in) unless options restrict them,
/// planned, estimated before and after, and their storage costs; the rule of
/// docs/verdict.md picks one or none; and what blocks an offline run. Throws what
/// plan_volume, estimate_volume and plan_impact throw. Cost: the workload settled and
/// replayed on the volume as it is once; a plan, the workload's replay after it and an
/// impact per candidate (5 to 8); and the volume state checks.
[[nodiscard]] Verdict decide(const OpenedImage& opened, std::size_t volume, const VerdictOptions& options,
                             const Progress& progress = {});

/// A volume's verdict, or why it has none.
struct VolumeVerdict {
    int partition = 0;
    std::optional<Verdict> verdict;
    /// What kept decide from weighing the volume (one no plan can be made for: cross-linked
    /// clusters); set exactly when `verdict` is not.
    std::optional<Error> error;
    /// The verdict's one line, or "no verdict: WHY".
    [[nodiscard]] std::string reason() const;
};

/// decide(), with the volume's own failure kept in the result: a volume no plan can be made
/// for is still measured, and an image's other volumes are still weighed, in every front
/// end alike. Throws only Error(Cancelled), when `progress` stops it.
[[nodiscard]] VolumeVerdict decide_volume(const OpenedImage& opened, std::size_t volume,
                                          const VerdictOptions& options, const Progress& progress = {});

}  // namespace guestfrag
