// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// The planning strategies of docs/design.md §5; each algorithm is spelled out in docs/planner.md.
enum class Strategy { Defrag, Consolidate, Optimize, ThinSafe, Shrink };

/// Every strategy, in the order help texts and menus offer them.
inline constexpr std::array<Strategy, 5> kStrategies{Strategy::Defrag, Strategy::Consolidate, Strategy::Optimize,
                                                     Strategy::ThinSafe, Strategy::Shrink};

/// "defrag", "consolidate", "optimize", "thin-safe", "shrink".
[[nodiscard]] std::string_view strategy_name(Strategy strategy) noexcept;
/// The strategy of that name, nullopt for anything else.
[[nodiscard]] std::optional<Strategy> parse_strategy(std::string_view name) noexcept;
/// "defrag, consolidate, optimize, thin-safe or shrink": every strategy's name in kStrategies order,
/// for help texts and messages.
[[nodiscard]] std::string strategy_choices();

/// The strategy for a disk with these layers (top first) and size when nobody chose one:
/// thin-safe on linked clones (a parent layer) and on thin disks (the top layer does not
/// hold every byte), where any other strategy grows the storage; defrag on thick disks.
[[nodiscard]] Strategy recommended_strategy(const std::vector<Layer>& layers, std::uint64_t virtual_size);

/// What the planner is asked to do and within which limits.
struct PlanOptions {
    Strategy strategy = Strategy::Defrag;
    /// Growth budget: thin growth plus clone delta growth may not exceed it (bytes).
    std::optional<std::uint64_t> max_growth;
    /// Data the plan may move (bytes).
    std::optional<std::uint64_t> max_moved;
    /// Granule of the growth and reclaimable figures and of shrink's packing (bytes);
    /// 0: the top layer's granule (the cluster size without layers).
    std::uint64_t granule = 0;
    /// Streams whose file path matches one of these (fnmatch-style, case-insensitive, `/`
    /// and `\` both separate, `*` crosses separators) are never moved.
    std::vector<std::string> exclude;
};

/// Plans `options.strategy` for `volume` of an image with `layers` (top layer first; may be
/// empty, then nothing counts as allocated). The plan carries `identity` and its summary,
/// computed on apply_plan's result (so every plan returned has passed the validator).
/// Throws Error(Corrupt) for a volume with cross-linked or bitmap-inconsistent clusters
/// (require_movable), Error(Cancelled) from `progress` (reported in streams considered) and
/// Error(Internal) if the planner ever produced a plan the validator rejects.
/// Cost: O(streams · log streams + runs + moves · log free extents); memory O(runs).
[[nodiscard]] Plan make_plan(const VolumeMap& volume, const std::vector<Layer>& layers, const PlanIdentity& identity,
                             const PlanOptions& options, const Progress& progress = {});

/// make_plan and the volume after the plan (apply_plan's result, which make_plan computes
/// anyway), for callers that analyse the after-state too.
struct PlanOutcome {
    Plan plan;
    VolumeMap after;
};
[[nodiscard]] PlanOutcome plan_and_apply(const VolumeMap& volume, const std::vector<Layer>& layers,
                                         const PlanIdentity& identity, const PlanOptions& options,
                                         const Progress& progress = {});

/// The summary of `plan` taking `before` to `after` (= apply_plan(before, plan)), growth and
/// reclaimable figures at `granule` (0: the top layer's), free-space fragmentation by
/// analyze_free_space on both maps. O(streams + runs + free extents).
[[nodiscard]] PlanSummary summarize_plan(const VolumeMap& before, const VolumeMap& after,
                                         const std::vector<Layer>& layers, std::uint64_t granule, const Plan& plan);

/// Whether `path` matches the fnmatch-style `glob` as PlanOptions::exclude describes.
[[nodiscard]] bool path_matches(std::string_view glob, std::string_view path);

}  // namespace guestfrag
