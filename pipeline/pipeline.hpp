// SPDX-License-Identifier: GPL-2.0-or-later
// The use cases, written once: open an image and analyse it, plan one volume (or take a
// saved plan), the plan's impact on the storage, and a workload's estimate before and after
// it (docs/pipeline.md). The CLI commands, the GUI and batch all run these; none of them
// calls the core's steps in sequence itself. Errors are core Errors, never printed here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/analysis.hpp"
#include "core/apply/volume_checks.hpp"
#include "core/estimate/estimate.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/input_hold.hpp"
#include "core/image/open_image.hpp"
#include "core/impact/impact.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/planner.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// An opened and analysed image. Both parts are immutable and may be shared with worker
/// threads (DiskImage reads are thread-safe); whoever holds a copy keeps them alive.
struct OpenedImage {
    std::shared_ptr<const DiskImage> image;
    std::shared_ptr<const ImageAnalysis> analysis;
    /// The image's files held while a new disk is written from them (open_and_hold); null
    /// for an image only analysed.
    std::shared_ptr<const InputHold> hold{};
    /// The host files the image was opened from (layers, extents, parents), for the checks
    /// of who else holds them (held_for_writing); empty when not known (an image opened by
    /// the caller, analyze_opened).
    std::vector<std::string> files{};
};

/// Opens the image at `path` (with `options`: a forced format, parents given instead of the
/// recorded ones; see open_image) and analyses every NTFS volume, or only partition `partition`.
/// Throws Error as open_image and analyze_image do (Cancelled from `progress`, which counts
/// MFT records). Cost: reads the partition table and every MFT of the volumes analysed.
[[nodiscard]] OpenedImage open_and_analyze(const std::string& path, const OpenOptions& options = {},
                                           std::optional<int> partition = {}, const Progress& progress = {});

/// open_and_analyze for a use case that writes a new disk from the image (apply, compact):
/// its files are held (InputHold: qemu's read locks, and their size and times) from the
/// moment they are open, before the analysis reads them. Throws what open_and_analyze and
/// InputHold throw (Error(Unsafe) for an image another process holds open for writing).
[[nodiscard]] OpenedImage open_and_hold(const std::string& path, const OpenOptions& options = {},
                                        std::optional<int> partition = {}, const Progress& progress = {});

/// What is wrong with the image's layer files although they can be read (Layer::warnings),
/// as "LAYER PATH: text", top layer first: what front ends show beside a result.
[[nodiscard]] std::vector<std::string> layer_warnings(const DiskImage& image);

/// analyze_image over an image the caller opened itself (e.g. behind a ThrottledImage);
/// the result shares ownership of `image`; `copy` sets the copy model (ImageAnalysis::copy).
/// Throws as analyze_image does.
[[nodiscard]] OpenedImage analyze_opened(std::shared_ptr<const DiskImage> image, std::optional<int> partition = {},
                                         const Progress& progress = {}, const CopyOptions& copy = {});

/// Where volume `map` of `analysis` lies on the disk: its partition's bytes. Throws
/// Error(Internal) when the analysed partition is not in the table.
[[nodiscard]] VolumeWindow volume_window(const ImageAnalysis& analysis, const VolumeMap& map);

/// A plan for one volume and the volume as the plan leaves it. The plan's summary is
/// complete (free-space figures included) and the plan has passed the validator.
struct PlannedVolume {
    std::size_t volume = 0;  ///< index into ImageAnalysis::volumes
    Plan plan;
    /// apply_plan's result, shareable with views; a front end that shows no after-figures
    /// may let it go (plan_impact then applies the plan again if it needs the map).
    std::shared_ptr<const VolumeMap> after;
};

/// `options` with what its placement order needs from the image: for a trace order, the
/// paths of the trace (load_trace on the volume, as `estimate --workload trace:` reads
/// them), unless already there. Callers that plan more than once prepare once. Throws as load_trace (Error(NotFound / Corrupt / Unsupported)).
[[nodiscard]] PlanOptions prepare_plan_options(const OpenedImage& opened, std::size_t volume,
                                               PlanOptions options);

/// Plans `options.strategy` for volume `volume` (an index into the analysis) and applies it
/// (options prepared by prepare_plan_options). The after-state is the replay's, with what
/// libntfs-3g will do to the records of the files it moves that have attribute lists or
/// gain fragments, found by rehearsing their moves in memory (rehearse_moves).
/// Throws std::out_of_range for a bad index, Error(Cancelled) from `progress` (streams
/// considered), Error(Internal) as make_plan does and Error(Unfinished) when apply would
/// not carry out a move of the plan. Cost: make_plan's, plus one copy of the volume's map
/// for the after-state, plus the rehearsal's.
[[nodiscard]] PlannedVolume plan_volume(const OpenedImage& opened, std::size_t volume, const PlanOptions& options,
                                        const Progress& progress = {});

/// Takes a saved `plan` (read_plan's result) for volume `volume`: checks that it was made
/// for this volume as it is now, applies it and recomputes its summary at `granule` (default:
/// the granule the plan was made at), with the rehearsal plan_volume makes. Throws
/// Error(Corrupt) when the identity differs, a move does not apply (see check_identity,
/// apply_plan) or apply would not carry a move out. Cost: apply_plan's and the rehearsal's.
[[nodiscard]] PlannedVolume adopt_plan(const OpenedImage& opened, std::size_t volume, Plan plan,
                                       std::optional<std::uint64_t> granule = {});

/// adopt_plan in two halves and without the summary, for a caller with something to do
/// between them that shows no summary (apply copies the disk beside the rehearsal):
/// replay_plan_file checks the identity and applies `plan`, returning the after-map, and
/// empties the plan's summary; rehearse_plan_file rehearses the moves and amends `after`, or
/// refuses the plan. Each throws what adopt_plan throws in its half; the second reads the
/// image and the analysis, `plan` and `after` only.
[[nodiscard]] VolumeMap replay_plan_file(const OpenedImage& opened, std::size_t volume, Plan& plan);
void rehearse_plan_file(const OpenedImage& opened, std::size_t volume, VolumeMap& after, Plan& plan);

/// What `planned.plan` would do to the storage under its volume (assess_impact), from the
/// after-map and summary plan_volume or adopt_plan made (the summary again only when
/// options.granule differs from the plan's, from planned.after or, when it was let go, a
/// fresh apply_plan). Throws Error(Cancelled) from `progress` (chunks
/// hashed) and whatever assess_impact throws. Cost: assess_impact's without its apply_plan
/// (options.deep reads the whole disk).
[[nodiscard]] Impact plan_impact(const OpenedImage& opened, const PlannedVolume& planned,
                                 const ImpactOptions& options = {}, const Progress& progress = {});

/// The copy figures of the whole image now, after `planned.plan` (the top layer as impact
/// places the plan's new blocks, top_layer_after_plan) and after re-laying it, with the
/// advice they lead to (docs/copy.md §7), under `copy`. Throws Error(Unsupported) for bad
/// `copy`. Cost: two copy_figures over the image's host runs.
[[nodiscard]] CopyStates plan_copy_states(const OpenedImage& opened, const PlannedVolume& planned,
                                          const CopyOptions& copy = {});

/// Adds the copy advice of `states` to `warnings` as impact warnings (COPY_PLAN_SCATTERS a
/// warning, COPY_RELAY_AFTER_PLAN an info, the bytes at stake those a full copy moves after
/// the plan), keeping them most severe first: for front ends that list one set of warnings.
void add_copy_advice(std::vector<ImpactWarning>& warnings, const CopyStates& states);

/// One volume's estimates of one workload: before, and after a plan when there is one.
struct VolumeEstimate {
    int partition = 0;
    PreparedWorkload workload;  ///< settled on the volume before any plan
    WorkloadEstimate before;
    std::optional<WorkloadEstimate> after;
    /// The top layer's provisioning the first writes were counted with (writes go there).
    LayerProvisioning provisioning;
    bool no_volume = false;  ///< estimate_disk's: the whole disk, no file system read
    /// estimate --compare: a real trace's IOs on this volume as it is (traced_stats).
    std::optional<IoStats> traced;
};

/// Settles `workload` (read by `shape`'s guest, IOs of at most its max_io bytes) on volume `volume` as it is,
/// then replays it on that state and, when `planned` is given (a plan for this volume and the volume after
/// it, from plan_volume or adopt_plan), on the volume after the plan too: the same IOs' sources both times.
/// Checks `progress` for a stop between the steps (the estimator reports nothing itself). Throws
/// Error(Unsupported) for a bad shape.max_io, whatever prepare_workload throws (a trace that cannot be read)
/// and Error(Cancelled). Cost: O(IOs) per state plus the trace's loading, and O(the plan's IOs) for the
/// after-map. First writes are counted on the top layer's written map (WrittenMap::from_layer) at
/// `provisioning`'s zeroing block: the top layer's detected provisioning unless given
/// (effective_provisioning). Before starts from that map; after from that map with the
/// blocks the plan's own writes touch added (written_after_plan, docs/estimate.md §8.1).
[[nodiscard]] VolumeEstimate estimate_volume(const OpenedImage& opened, std::size_t volume,
                                             const Workload& workload, const IoShape& shape,
                                             const PlannedVolume* planned, const DeviceModels& models = {},
                                             const Progress& progress = {},
                                             const std::optional<LayerProvisioning>& provisioning = {});

/// estimate_volume's figures for `planned` (a plan for volume `volume`), its before taken
/// from `before` (an estimate_volume of that volume with no plan): the workload is settled
/// and replayed on the volume as it is once for every plan weighed against it. The after
/// replays before's IOs on the volume after the plan, with before's provisioning.
[[nodiscard]] VolumeEstimate estimate_after(const OpenedImage& opened, const VolumeEstimate& before,
                                            const PlannedVolume& planned, const DeviceModels& models = {});

/// A fio job with target=disk on the whole of `image`, which need hold no volume guestfrag
/// reads (a new thin disk, no partition table, another file system): estimate_volume's
/// figures with partition 0 and no plan. Throws Error(Unsupported) for another workload.
[[nodiscard]] VolumeEstimate estimate_disk(const DiskImage& image, const Workload& workload,
                                           const IoShape& shape, const DeviceModels& models = {},
                                           const std::optional<LayerProvisioning>& provisioning = {});

/// The statistics of the block IO trace `trace` (an nbdkit log, blkparse output or a
/// vscsiStats trace, docs/estimate.md §2) on volume `volume` as it is, with `models`: what
/// `estimate --compare` sets beside the estimate. Throws Error(Unsupported) when `trace` is
/// not an IO trace, and what read_io_trace throws. O(trace lines + IOs · log runs).
[[nodiscard]] IoStats traced_stats(const OpenedImage& opened, std::size_t volume, const std::string& trace,
                                   const DeviceModels& models);

}  // namespace guestfrag
