// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/stream_label.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// One move of a plan (docs/design.md §5, contract): `clusters` clusters of stream
/// (mft_record, stream label) starting at `vcn` go from `from_lcn` to `to_lcn`. When the
/// move runs, the destination is free; afterwards its source is free.
struct Move {
    std::uint64_t mft_record = 0;
    StreamLabel stream;  ///< Stream::label(), e.g. "$DATA", "$DATA:ads", "$INDEX_ALLOCATION:$I30"
    std::int64_t vcn = 0;
    std::int64_t from_lcn = 0;
    std::int64_t to_lcn = 0;
    std::int64_t clusters = 0;

    friend bool operator==(const Move&, const Move&) = default;
};

/// Largest number a plan may carry in any LCN, VCN or cluster count: NTFS addresses at most
/// 2^64 clusters but no real volume comes near 2^62, and the bound keeps every sum of two
/// such numbers inside int64_t.
inline constexpr std::int64_t kMaxPlanNumber = std::int64_t{1} << 62;

/// What a plan was made for, so that a plan is never applied to another or a changed
/// image (checked before any use of the plan).
struct PlanIdentity {
    std::string image_path;
    std::uint64_t virtual_size = 0;
    int partition = 0;
    std::uint64_t volume_serial = 0;
    std::int64_t total_clusters = 0;
    std::uint32_t cluster_size = 0;
    /// FNV-1a 64 over the volume's $Bitmap-derived free extents and every stream's
    /// extents: changes whenever the allocation changes.
    std::uint64_t allocation_digest = 0;

    friend bool operator==(const PlanIdentity&, const PlanIdentity&) = default;
};

/// What a plan claims it achieves (docs/planner.md §2 gives every formula). Counting figures
/// follow docs/metrics.md exactly, so analysing apply_plan's result gives the same numbers.
/// Growth and reclaimable figures are at `granule_size` bytes (docs/planner.md §3).
struct PlanSummary {
    std::uint64_t moves = 0;
    std::uint64_t moved_clusters = 0;
    std::uint64_t moved_bytes = 0;              ///< moved_clusters · cluster size
    std::uint64_t fragments_before = 0;         ///< Σ Stream::fragments() over the volume
    std::uint64_t fragments_after = 0;
    std::uint64_t fragmented_streams_before = 0;  ///< streams with more than one fragment
    std::uint64_t fragmented_streams_after = 0;
    std::uint64_t free_extents_before = 0;      ///< intervals of VolumeMap::free
    std::uint64_t free_extents_after = 0;
    std::uint64_t largest_free_extent_clusters_before = 0;
    std::uint64_t largest_free_extent_clusters_after = 0;
    /// ZFS-weighted free-space fragmentation (docs/metrics.md §3), analyze_free_space's
    /// figure. summarize_plan always fills them; optional only because plan files written
    /// without them still read.
    std::optional<double> free_space_fragmentation_percent_before;
    std::optional<double> free_space_fragmentation_percent_after;
    std::uint64_t granule_size = 0;             ///< granule of the figures below, bytes
    std::uint64_t thin_growth_bytes = 0;
    std::uint64_t clone_delta_growth_bytes = 0;
    std::uint64_t reclaimable_bytes_before = 0;
    std::uint64_t reclaimable_bytes_after = 0;

    friend bool operator==(const PlanSummary&, const PlanSummary&) = default;
};

/// Intent only: an ordered list of moves and the strategy that chose them. Applying it is
/// a separate step (apply_plan) that never touches an image.
struct Plan {
    PlanIdentity identity;
    std::string strategy;  ///< "defrag", "consolidate", "optimize", "thin-safe", "shrink"
    /// The placement order (PlacementOrder::text()) of a strategy that takes one, "" for
    /// thin-safe and shrink (and plans written before orders existed).
    std::string order;
    std::vector<Move> moves;
    /// Streams the planner wanted to move but could not, with the reason (no free region
    /// large enough, budget exhausted, ...).
    struct Skipped {
        std::uint64_t mft_record = 0;
        std::string stream;
        std::string reason;

        friend bool operator==(const Skipped&, const Skipped&) = default;
    };
    std::vector<Skipped> skipped;
    /// Remarks for people about the plan as a whole ("3 streams were placed inside the MFT
    /// zone: nothing else was large enough").
    std::vector<std::string> notes;
    PlanSummary summary;
};

}  // namespace guestfrag
