// SPDX-License-Identifier: GPL-2.0-or-later
// What the image file's layout costs a copy of the whole disk (a clone, a template deploy,
// a storage migration, `qemu-img convert`): array-offload commands per transfer size and
// the IOs of a host-side copy, now and for the same data re-laid contiguously. Pure
// functions over the layers' host runs; formulas and the calibration in docs/copy.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/estimate/device_model.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/image/disk_image.hpp"

namespace guestfrag {

inline constexpr std::uint64_t kCopyMiB = std::uint64_t{1} << 20;

/// The command and byte costs of one offloading array, fitted to a published measurement
/// (docs/copy.md §3): time = commands · command_seconds + bytes · byte_seconds.
struct OffloadPreset {
    const char* name;
    double command_seconds;
    double byte_seconds;
};

/// The 65 GiB template deploys on an all-flash array under vSphere 6 (eager-zeroed: 4,200
/// commands in 13 s; thin: 44,000 commands in 46 s), solved for the two costs:
/// (46 − 13) s / (44,000 − 4,200) commands, and the rest of the 13 s over 65 GiB.
inline constexpr OffloadPreset kAllFlashVsphere6{
    "all-flash-vsphere6", 33.0 / 39800.0,
    (13.0 - 4200.0 * (33.0 / 39800.0)) / (65.0 * 1024.0 * 1024.0 * 1024.0)};

/// Every preset `--copy-preset` names, the default first.
inline constexpr OffloadPreset kOffloadPresets[] = {kAllFlashVsphere6};

/// The preset called `name`; nullptr when there is none.
[[nodiscard]] const OffloadPreset* find_offload_preset(std::string_view name) noexcept;

/// The block size of a VMFS5 datastore: the most one offload command of a thin disk
/// moved there (vSphere 5.x), whatever the transfer size.
inline constexpr std::uint64_t kVmfs5ThinCap = kCopyMiB;

/// What the copy model is asked (docs/copy.md §2).
struct CopyOptions {
    /// Largest offload command (ESXi's MaxHWTransferSize): 4 MiB by default, 16 MiB at most.
    std::vector<std::uint64_t> transfer_sizes = {1 * kCopyMiB, 4 * kCopyMiB, 8 * kCopyMiB, 16 * kCopyMiB};
    bool vmfs5_thin = false;  ///< cap every command at kVmfs5ThinCap (thin disks on VMFS5)
    OffloadPreset preset = kAllFlashVsphere6;
    /// Largest read of a host-side copy: qemu-img convert's 2 MiB buffer.
    std::uint64_t host_io_bytes = 2 * kCopyMiB;
    DeviceModels devices;  ///< what the host-side copy's reads are timed on
};

/// Throws Error(Unsupported) for an empty list, a transfer size that is 0, not a multiple
/// of 512 bytes or above 16 MiB, a host IO size that is 0 or not a multiple of 512, or a
/// preset cost that is negative or not finite.
void check_copy_options(const CopyOptions& options);

/// What a full copy reads: the host runs of the data it copies, in guest order.
struct CopySource {
    /// Maximal runs contiguous in guest order and in one file; `file` numbers the files of
    /// the layers read (for a chain: the layers' files one after another, top layer first).
    std::vector<HostExtent> runs;
    /// Every byte the copy reads (placed or not): maximal ranges in guest order. A vector,
    /// not a ByteSet: it is only walked, and a million ranges copy cheaper this way.
    std::vector<ByteSet::interval_type> copied;
    std::uint64_t compressed_bytes = 0;      ///< of those, compressed: no contiguous host run
    std::uint64_t compressed_transfers = 0;  ///< the compressed clusters/grains, one transfer each
};

/// Layer `layer` copied on its own (a delta, a template): its allocated data.
/// O(host runs + allocated ranges).
[[nodiscard]] CopySource layer_copy_source(const Layer& layer);

/// The chain as a full clone reads it: each byte from the topmost layer that stores it
/// or declares it zero (zero ranges are not copied). O(Σ host runs + ranges · log ranges).
[[nodiscard]] CopySource chain_copy_source(std::span<const Layer> layers);

/// Offload figures for one transfer size.
struct OffloadFigures {
    std::uint64_t transfer_size = 0;  ///< as asked
    std::uint64_t command_limit = 0;  ///< the largest command: transfer_size, or the VMFS5 cap
    std::uint64_t commands = 0;       ///< now: every run cut at command_limit, plus compressed transfers
    std::uint64_t compressed_commands = 0;  ///< of those, one per compressed cluster/grain
    double average_bytes = 0;               ///< copied bytes / commands (0 without commands)
    double seconds = 0;                     ///< preset: commands · command_seconds + bytes · byte_seconds
    std::uint64_t relaid_commands = 0;      ///< the same data contiguous in guest order
    double relaid_average_bytes = 0;
    double relaid_seconds = 0;
};

/// The copy model's answer for one CopySource.
struct CopyFigures {
    std::uint64_t bytes = 0;        ///< bytes copied
    std::uint64_t runs = 0;         ///< host runs now
    std::uint64_t relaid_runs = 0;  ///< guest-contiguous ranges: the runs of a re-laid copy
    std::uint64_t compressed_bytes = 0;
    std::uint64_t compressed_transfers = 0;
    std::vector<OffloadFigures> offload;  ///< one per transfer size, in the order asked
    /// A host-side copy reading the placed runs in guest order, in reads of at most
    /// host_io_bytes; each file is taken to lie after the previous one on the datastore.
    /// Compressed data is not in this stream (its place is not known).
    IoStats host_copy;
    IoStats host_copy_relaid;  ///< the same bytes read from one contiguous file
};

/// Commands and IOs of `source` under `options` (checked by the caller). Pure;
/// O((runs + IOs) · transfer sizes); memory: one Io per host read.
[[nodiscard]] CopyFigures copy_figures(const CopySource& source, const CopyOptions& options);

/// A finding about the copy figures, for front ends (code, one line).
struct CopyWarning {
    std::string code;  ///< "COPY_LAYOUT_SCATTERED"
    std::string message;
};

/// COPY_LAYOUT_SCATTERED when, at some transfer size, the copy needs at least twice the
/// offload commands of a re-laid copy (the worst size is named); empty otherwise.
[[nodiscard]] std::vector<CopyWarning> copy_warnings(const CopyFigures& figures);

/// A full copy of the whole image: the chain as a full clone reads it, or the one layer.
[[nodiscard]] CopySource image_copy_source(std::span<const Layer> layers);

/// The three states of docs/copy.md §7 side by side, for one plan. `now` is the image as
/// it is (what analyze prints); `after_plan` is the image with its top layer as the plan
/// leaves it, and its re-laid figures are the third state: the image after the plan, then
/// re-laid by a clone, a Storage vMotion or `qemu-img convert`.
struct CopyStates {
    CopyFigures now;
    CopyFigures after_plan;
    std::vector<CopyWarning> advice;  ///< copy_advice(now, after_plan)
};

/// The copy states of `layers` (top first, non-empty) when the plan turns the top layer
/// into `top_after` (impact's after-layout). Checks `options`. O(copy_figures of both).
[[nodiscard]] CopyStates copy_states(std::span<const Layer> layers, const Layer& top_after,
                                     const CopyOptions& options);

/// The offload figures of `figures` at transfer size `transfer`; nullptr when not asked.
[[nodiscard]] const OffloadFigures* offload_at(const CopyFigures& figures, std::uint64_t transfer) noexcept;

/// The offload figures the advice compares: at 4 MiB (ESXi's default transfer size) when
/// `figures` has them, else at its first transfer size; nullptr without any.
[[nodiscard]] const OffloadFigures* reference_offload(const CopyFigures& figures) noexcept;

/// What to do about the copies, from the states (docs/copy.md §7), at the reference size
/// with A = commands now, B = after the plan, C = after the plan re-laid:
/// COPY_PLAN_SCATTERS when B ≥ 1.1·A and B > A (the plan scatters the file: re-lay it after
/// applying the plan); otherwise COPY_RELAY_AFTER_PLAN when B ≥ 2·C (re-laying after the
/// plan cuts the commands at least in half); otherwise nothing.
[[nodiscard]] std::vector<CopyWarning> copy_advice(const CopyFigures& now, const CopyFigures& after_plan);

/// Where a raw or flat file lies on the host's device (FIEMAP): its extents, merged where
/// one continues the previous one both in the file and on the device.
struct PhysicalFigures {
    PhysicalFile file;               ///< as read (extents left out of this copy)
    std::uint64_t extents = 0;       ///< merged extents
    std::uint64_t mapped_bytes = 0;  ///< bytes the extents cover
};

/// Merges `file`'s extents (already in file order) as PhysicalFigures describe.
[[nodiscard]] PhysicalFigures physical_figures(const PhysicalFile& file);

/// The copy model over a whole image: per layer, the chain, the physical level.
struct ImageCopyCost {
    std::vector<CopyFigures> layers;  ///< per layer, top first: the layer copied on its own
    CopyFigures chain;                ///< the chain as a full clone reads it
    std::vector<std::vector<PhysicalFigures>> physical;  ///< per layer: its raw/flat files
    std::vector<CopyWarning> warnings;                   ///< over the chain
};

/// Copy figures of `image` (physical level read now through DiskImage::physical_files;
/// a file whose extents cannot be read gets the error as its note).
[[nodiscard]] ImageCopyCost analyze_copy_cost(const DiskImage& image, const CopyOptions& options = {});

}  // namespace guestfrag
