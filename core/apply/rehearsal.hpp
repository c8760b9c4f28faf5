// SPDX-License-Identifier: GPL-2.0-or-later
// What libntfs-3g does to the records of the files a plan moves, found by doing it in memory.
#pragma once

#include <cstdint>
#include <vector>

#include "core/apply/mover.hpp"
#include "core/apply/volume_checks.hpp"
#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// A rehearsed file's $ATTRIBUTE_LIST as libntfs-3g leaves it after the file's moves.
struct RehearsedList {
    std::uint64_t record = 0;   ///< the file's base record
    bool non_resident = false;  ///< false: resident, or removed (no extension record left)
    std::uint64_t size = 0;     ///< data size, when non-resident
    std::uint64_t allocated_size = 0;
    std::vector<Extent> runs;  ///< VCN order, when non-resident
};

/// What rehearse_moves found.
struct Rehearsal {
    std::vector<RehearsedList> lists;  ///< one per rehearsed file, by record
    std::vector<SkippedMove> skipped;  ///< moves apply would skip (indices into Plan::moves)
};

/// The files of `plan` whose record layout its moves may change in a way the replay
/// (apply_plan, which moves clusters only) cannot see: each file one of whose streams moves
/// and that has a non-resident $ATTRIBUTE_LIST in `before`, or whose streams have more
/// fragments in `after` (the replay's result) than in `before`. Sorted. O(moves · log moves +
/// streams).
[[nodiscard]] std::vector<std::uint64_t> files_to_rehearse(const VolumeMap& before, const VolumeMap& after,
                                                           const Plan& plan);

/// Carries out the moves of `files` (sorted base records; files_to_rehearse) on the NTFS
/// volume at `window` of `image`, as apply does (carry_out_moves), on a scratch disk in
/// memory over the image: the image is never written. libntfs-3g lays each new runlist out
/// over the file's records, and shortens, removes, grows or adds its attribute list as it
/// needs to (docs/apply.md, "What libntfs-3g does to a record"); what it left is read back.
/// The moves of system files (records below 16, which the mount reads) are carried out
/// too; those of the other files are not: their sources are free and their
/// destinations in use in the scratch $Bitmap from the start, so that every rehearsed
/// move finds its destination free as it will in plan order and a cluster libntfs-3g
/// takes is one that is free after the plan. The contents of user files' $DATA streams
/// are not copied (nothing reads them); every other stream's are.
/// Throws Error(Corrupt) when the volume cannot be mounted, Error(Io) when libntfs-3g fails
/// to lay a runlist out (apply would fail there too) or the image cannot be read.
/// Cost: nothing when `files` is empty; else reads the image's $Bitmap, the files' records
/// and their non-$DATA clusters, memory for what libntfs-3g writes.
[[nodiscard]] Rehearsal rehearse_moves(const DiskImage& image, const VolumeWindow& window,
                                       const VolumeMap& before, const Plan& plan,
                                       const std::vector<std::uint64_t>& files);

/// Amends `after` (the replay's volume) by `rehearsal`: each rehearsed file's
/// $ATTRIBUTE_LIST stream takes the runs libntfs-3g left it, or goes when it left none, and
/// the free space gains what lists gave back and loses what they took. Returns whether
/// anything changed. O(lists · log streams).
bool adopt_rehearsal(VolumeMap& after, const Rehearsal& rehearsal);

}  // namespace guestfrag
