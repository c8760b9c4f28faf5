// SPDX-License-Identifier: GPL-2.0-or-later
// Carries out a plan's moves on a writable NTFS volume through libntfs-3g.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/apply/volume_checks.hpp"
#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class RateLimiter;
class WritableDisk;

/// A move of the plan left undone, and why.
struct SkippedMove {
    std::size_t index = 0;  ///< into Plan::moves
    std::string reason;

    friend bool operator==(const SkippedMove&, const SkippedMove&) = default;
};

/// What carry_out_moves did.
struct MoveOutcome {
    std::vector<std::size_t> done;     ///< indices into Plan::moves, in order
    std::vector<SkippedMove> skipped;  ///< in plan order
    std::uint64_t bytes_copied = 0;    ///< cluster bytes moved (written unless in place already)
};

/// Runs `plan`'s moves, in order, on the NTFS volume at `window` of `disk`, which must be the
/// disk `before` was read from (a copy of it). The volume is mounted writable with
/// NTFS_MNT_FORENSIC, so nothing but the clusters, runlists and $Bitmap bits of the moves
/// (and the records libntfs-3g lays a runlist out in) is written. Consecutive moves of one
/// stream are one run: a compressed or sparse stream's run must move whole compression units
/// (unit_left_in_part) or is skipped whole; per move, the source run must still be where the
/// plan says and the destination clear in $Bitmap; the destination bits are set, the clusters
/// copied and read back (unless the destination holds them already: compaction writes them
/// ahead), the runlist repointed in memory and the source bits cleared. When the
/// run ends its runlist is written with ntfs_attr_update_mapping_pairs, over as many records
/// (base, extension, attribute list) as it needs. A move that cannot be done is skipped with
/// its reason, never half done: a resident, encrypted or missing stream, a system file the
/// planner does not move, a unit left in part, and a move whose source or destination an
/// earlier skip left different. `before_move(i, progress.stop)` runs before move i is tried (a
/// schedule waits there for the move's window; may throw), `after_move(i)` after move i is
/// done (a test seam; may throw). Each block of clusters a move copies first takes its bytes
/// from `limiter` when there is one.
/// Throws Error(Corrupt) when the volume cannot be mounted, Error(Io) when a copy does not
/// read back the same or libntfs-3g fails half way (the disk is then unusable and the
/// caller discards it), Error(Cancelled) from `progress` (between moves; moves done).
/// Cost: reads each moved cluster and its destination once, and writes it and reads it back
/// once unless the destination held it; memory 2 MiB plus twice the largest runlist.
MoveOutcome carry_out_moves(WritableDisk& disk, const VolumeWindow& window, const VolumeMap& before,
                            const Plan& plan, const Progress& progress = {},
                            const std::function<void(std::size_t)>& after_move = {},
                            RateLimiter* limiter = nullptr,
                            const std::function<void(std::size_t, const std::stop_token&)>& before_move = {});

/// The bytes of `within` that lie in clusters the $Bitmap of the NTFS volume at `window`
/// of `disk` calls in use: after the moves, the clusters a skipped move (or libntfs-3g)
/// kept where the plan freed them. Mounts the volume as carry_out_moves does and writes
/// nothing. Throws Error(Corrupt) when the volume cannot be mounted, Error(Io) when $Bitmap
/// cannot be read. Cost: reads the bits of `within` once.
ByteSet bytes_in_use(WritableDisk& disk, const VolumeWindow& window, const ByteSet& within);

}  // namespace guestfrag
