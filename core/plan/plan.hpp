// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// One move of a plan (DESIGN §5, contract): `clusters` clusters of stream
/// (mft_record, stream label) starting at `vcn` go from `from_lcn` to `to_lcn`. When the
/// move runs, the destination is free; afterwards its source is free.
struct Move {
    std::uint64_t mft_record = 0;
    std::string stream;  ///< Stream::label(), e.g. "$DATA", "$DATA:ads", "$INDEX_ALLOCATION:$I30"
    std::int64_t vcn = 0;
    std::int64_t from_lcn = 0;
    std::int64_t to_lcn = 0;
    std::int64_t clusters = 0;

    friend bool operator==(const Move&, const Move&) = default;
};

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

/// Intent only: an ordered list of moves and the strategy that chose them. Applying it is
/// a separate step (apply_plan) that never touches an image.
struct Plan {
    PlanIdentity identity;
    std::string strategy;  ///< "defrag", "consolidate", "thin-safe", "shrink"
    std::vector<Move> moves;
    /// Streams the planner wanted to move but could not, with the reason (no free region
    /// large enough, budget exhausted, ...).
    struct Skipped {
        std::uint64_t mft_record = 0;
        std::string stream;
        std::string reason;
    };
    std::vector<Skipped> skipped;
};

}  // namespace guestfrag
