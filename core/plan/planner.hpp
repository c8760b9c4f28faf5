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
inline constexpr std::array<Strategy, 5> kStrategies{
    Strategy::Defrag, Strategy::Consolidate, Strategy::Optimize, Strategy::ThinSafe, Strategy::Shrink};

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

/// The order a placing strategy lays streams out in (docs/planner.md §14): the order of the
/// reads it serves.
struct PlacementOrder {
    enum class Kind : std::uint8_t {
        Size,   ///< "size": by size, as free space is packed best (best fit decreasing)
        Mft,    ///< "mft": MFT record order, what `scan` reads in
        Path,   ///< "path": depth-first path order (path_order), what `scan:path` reads in
        Trace,  ///< "trace:SOURCE": the traced files first in trace order, the rest by path
    };
    Kind kind = Kind::Size;
    std::string trace_source;  ///< Trace: as `estimate --workload trace:` takes it

    /// "size", "mft", "path" or "trace:SOURCE".
    [[nodiscard]] std::string text() const;
    friend bool operator==(const PlacementOrder&, const PlacementOrder&) = default;
};

/// Parses "size", "mft", "path" or "trace:SOURCE" (SOURCE non-empty); Error(Unsupported)
/// naming the choices otherwise.
[[nodiscard]] PlacementOrder parse_order(std::string_view text);

/// Whether `strategy` places streams in an order: defrag, consolidate and optimize do;
/// thin-safe and shrink choose places by what is allocated and take none.
[[nodiscard]] bool takes_order(Strategy strategy) noexcept;

/// The order `strategy` uses when none is given (docs/planner.md §14); nullopt for the
/// strategies that take none.
[[nodiscard]] std::optional<PlacementOrder> default_order(Strategy strategy);

/// What the planner is asked to do and within which limits.
struct PlanOptions {
    Strategy strategy = Strategy::Defrag;
    /// Placement order; nullopt: default_order(strategy). Given to a strategy that takes
    /// none, make_plan throws Error(Unsupported).
    std::optional<PlacementOrder> order;
    /// Trace order only: the volume paths the trace names, in order (load_trace's result;
    /// the planner does not read images). make_plan throws Error(Internal) without them.
    std::optional<std::vector<std::string>> trace_paths;
    /// Growth budget: thin growth plus clone delta growth may not exceed it (bytes).
    std::optional<std::uint64_t> max_growth;
    /// Data the plan may move (bytes).
    std::optional<std::uint64_t> max_moved;
    /// Granule of the growth and reclaimable figures and of shrink's packing (bytes);
    /// 0: the top layer's granule (the cluster size without layers).
    std::uint64_t granule = 0;
    /// shrink only: once no more granules can be emptied by moving whole streams, empty the
    /// sparsest of the rest by moving the parts of streams lying in them, split over free
    /// room where no single hole holds a part (docs/planner.md §8, step 6). Packs into
    /// fewer granules at the price of fragments: what compaction wants.
    bool split_streams = false;
    /// Streams whose file path matches one of these (fnmatch-style, case-insensitive, `/`
    /// and `\` both separate, `*` crosses separators) are never moved.
    std::vector<std::string> exclude;
    /// The plan is carried out at once and never shown or saved (compact's packing): no
    /// summary, unless the strategy's own check needs one (optimize), and no identity
    /// (pipeline's plan_volume). On the 1M-file volume they were 0.3 s of compact's planning,
    /// which its copy waits for (docs/benchmarks.md).
    bool carried_out_at_once = false;
};

/// The order make_plan uses for `options` (options.order or the strategy's default);
/// throws Error(Unsupported, "STRATEGY cannot take --order ORDER: …") when the strategy
/// takes none.
[[nodiscard]] std::optional<PlacementOrder> effective_order(const PlanOptions& options);

/// Plans `options.strategy` for `volume` of an image with `layers` (top layer first; may be
/// empty, then nothing counts as allocated). The plan carries `identity` and its summary,
/// computed on apply_plan's result (so every plan returned has passed the validator).
/// Throws Error(Corrupt) for a volume with cross-linked or bitmap-inconsistent clusters
/// (require_movable), Error(Cancelled) from `progress` (reported in streams considered) and
/// Error(Internal) if the planner ever produced a plan the validator rejects.
/// Cost: O(streams · log streams + runs + moves · log free extents); memory O(runs).
[[nodiscard]] Plan make_plan(const VolumeMap& volume, const std::vector<Layer>& layers,
                             const PlanIdentity& identity, const PlanOptions& options,
                             const Progress& progress = {});

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
                                         const std::vector<Layer>& layers, std::uint64_t granule,
                                         const Plan& plan);

/// Whether `path` matches the fnmatch-style `glob` as PlanOptions::exclude describes.
[[nodiscard]] bool path_matches(std::string_view glob, std::string_view path);

}  // namespace guestfrag
