// SPDX-License-Identifier: GPL-2.0-or-later
// The plan's own IO: what carrying the moves out reads and writes, replayed on the storage's
// written map (docs/impact.md §10).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/estimate/device_model.hpp"
#include "core/estimate/estimate.hpp"
#include "core/estimate/io.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/estimate/written_map.hpp"
#include "core/image/provisioning.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// Visits, one at a time and never holding them, the IOs carrying out `plan` on `volume`
/// issues to the virtual disk, in the order apply's mover issues them: moves in plan order;
/// each move's n · C bytes cut from its start into blocks of at most `max_io` bytes, each
/// block read at its source then written at its destination (P + lcn · C + offset in the
/// move, P the partition offset, C the cluster size). The mover's read-back of each written
/// block is not part of it (a check, not a cost of the plan). Throws Error(Unsupported) for
/// a max_io that is not valid_max_io or a cluster size that is not a positive multiple of
/// 512, Error(Corrupt) for a move with a negative number or outside the volume (once the
/// IOs of the moves before it were visited). Cost: O(moves + IOs) time, no memory.
void for_each_plan_io(const VolumeMap& volume, const Plan& plan, std::uint64_t max_io,
                      const std::function<void(const Io&)>& visit);

/// What carrying out a plan costs the storage under the top layer (docs/impact.md §10).
struct PlanWrites {
    std::uint64_t max_io = kDefaultMaxIo;
    /// The top layer's provisioning the first writes were counted with (type and zero block).
    LayerProvisioning provisioning;
    /// summarize_ios of for_each_plan_io's IOs on the top layer's written map: IOs, bytes, writes, first
    /// writes and eager, lazy and thin side by side on each device model.
    IoStats stats;
    /// Destination bytes that land in zeroing blocks already written when the write comes
    /// (by the layer before the plan or by an earlier write of the plan) ...
    std::uint64_t into_written_bytes = 0;
    /// ... and those landing in blocks that write is the first to (into_written_bytes +
    /// into_new_bytes = the bytes the plan writes = moved bytes).
    std::uint64_t into_new_bytes = 0;
};

/// The plan's own IO stream (for_each_plan_io) summarised with `models`, first writes counted on
/// a copy of `written` (the top layer's written map at `provisioning.zero_block`), and its
/// destination bytes split by whether their block was already written. Throws as for_each_plan_io.
/// Cost: O(IOs · (log buckets + log written runs)).
[[nodiscard]] PlanWrites assess_plan_writes(const VolumeMap& volume, const Plan& plan,
                                            const WrittenMap& written, const LayerProvisioning& provisioning,
                                            const DeviceModels& models = {},
                                            std::uint64_t max_io = kDefaultMaxIo);

/// The written map after the plan: `written` with the blocks of every destination write of
/// for_each_plan_io added (the map a workload after the plan starts from, docs/estimate.md §8.1).
/// Throws as for_each_plan_io. Cost: O(IOs · log written runs).
[[nodiscard]] WrittenMap written_after_plan(const WrittenMap& written, const VolumeMap& volume,
                                            const Plan& plan);

}  // namespace guestfrag
