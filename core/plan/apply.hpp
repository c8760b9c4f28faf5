// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// Throws Error(Corrupt) "volume N: <finding>; run chkdsk before planning" when a finding of
/// `map` blocks moves (cross-linked clusters, files' clusters free in $Bitmap): whatever
/// would move clusters calls it first, since a plan's free-space bookkeeping assumes every
/// cluster has at most one owner and $Bitmap agrees with the files. O(findings).
void require_movable(const VolumeMap& map);

/// Throws Error(Unsupported) "a volume of over 4,294,967,295 WHAT" when `count` does not
/// fit 32 bits: the validator and the optimizer number streams (and the optimizer runs) in
/// 4 bytes, which keeps their tables of a million streams small.
void require_32bit(std::size_t count, std::string_view what);

/// The volume as it would be after `plan` ran: streams' extents rewritten move by move,
/// free space updated. Pure; the image is never touched. Validates as it goes and throws
/// Error(Corrupt, "move N: ...") naming the first move whose source is not owned by its
/// stream at that moment or whose destination is not free (or is unmovable/out of range).
/// Move numbers in its messages are 0-based: "move N" is `moves[N]` of the plan (and of its
/// JSON document). Stream `(mft_record, label)` must be Placement::Movable; a move's source
/// [from_lcn, from_lcn + clusters) must be exactly what the stream maps at VCNs
/// [vcn, vcn + clusters) (allocated, LCN-contiguous); its destination must be free, inside
/// the volume and outside `unmovable`; a run of consecutive moves of one compressed or sparse
/// stream must move whole compression units (unit_left_in_part; its first move is named).
/// Runs are split and merged as needed. A volume with cross-linked or bitmap-inconsistent
/// clusters is refused first (require_movable).
/// Cost: one copy of `before`, then O(moves · log) plus the runs each move covers; a stream
/// of many runs is held in an ordered map while it is being edited, so a stream moved in
/// many pieces costs O(runs · log runs), never quadratic (docs/planner.md §1).
[[nodiscard]] VolumeMap apply_plan(const VolumeMap& before, const Plan& plan);

/// apply_plan without its copy of `before`: replays `plan` on `before`, validating and
/// throwing as apply_plan does, calls visit(i, runs) with the runs each stream it moves ends
/// with (i indexes before.streams; each stream once, in no particular order), and returns the
/// free clusters after it. What the proofs of a copy need of a prediction, without holding
/// a second map of the volume. Cost: apply_plan's without the copy.
[[nodiscard]] ClusterSet replay_plan(const VolumeMap& before, const Plan& plan,
                                     const std::function<void(std::size_t, std::span<const Extent>)>& visit);

/// The figures of a plan's summary (PlanSummary's "after" ones, docs/planner.md §2) for the
/// volume after the first `moves` moves of a plan.
struct PrefixFigures {
    std::size_t moves = 0;
    std::uint64_t moved_bytes = 0;
    std::uint64_t free_extents = 0;
    std::uint64_t largest_free_extent_clusters = 0;
    double free_space_fragmentation_percent = 0;
    std::uint64_t fragmented_streams = 0;
};

/// PrefixFigures after each of the first `ends[k]` moves of `plan` (ascending, each at most
/// the plan's size), from one replay of the whole plan, validated and throwing as apply_plan
/// does: each is what summarize_plan says of the volume after that prefix. Cost:
/// apply_plan's without its copy of `before`, and per prefix O(free extents + runs of the
/// streams moved so far).
[[nodiscard]] std::vector<PrefixFigures> replay_prefixes(const VolumeMap& before, const Plan& plan,
                                                         std::span<const std::size_t> ends);

/// VCN ranges [lower, upper) of one stream (the same interval set as ClusterSet's LCNs).
using VcnSet = ClusterSet;

/// The first VCN of a compression unit of `stream` (Stream::unit_clusters) that moves of the
/// VCNs `moved` would leave in part: some of the unit's allocated clusters among them, others
/// not. nullopt when every unit they touch moves whole, and always for a stream without
/// units. NTFS moves compressed and sparse streams in whole units (FSCTL_MOVE_FILE rounds to
/// them), so a plan's consecutive moves of such a stream must cover whole units.
/// O(ranges · log runs + the runs inside the touched units).
[[nodiscard]] std::optional<std::int64_t> unit_left_in_part(const Stream& stream, const VcnSet& moved);

/// unit_left_in_part of the VCNs a run of consecutive moves of `stream` carries.
[[nodiscard]] std::optional<std::int64_t> unit_left_in_part(const Stream& stream, std::span<const Move> run);

/// The base records of the files `moves` move, ascending, each once.
[[nodiscard]] std::vector<std::uint64_t> files_moved(std::span<const Move> moves);

/// The identity a plan for `volume` on the image at `image_path` of `virtual_size` carries.
/// The digest is FNV-1a 64 over the free extents and every stream's (record, type, name,
/// runs), in VolumeMap order (docs/planner.md §4). O(free extents + runs).
[[nodiscard]] PlanIdentity identify(const VolumeMap& volume, const std::string& image_path, std::uint64_t virtual_size);

/// Throws Error(Corrupt, "plan was made for another image or the image changed since (...)")
/// naming the first field of `actual` that differs from `planned`. The image path is not
/// compared: an image may be moved or named relatively without changing.
void check_identity(const PlanIdentity& planned, const PlanIdentity& actual);

}  // namespace guestfrag
