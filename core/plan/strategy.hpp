// SPDX-License-Identifier: GPL-2.0-or-later
// Pieces shared by the strategies (internal to core/plan).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/plan/free_index.hpp"
#include "core/plan/growth.hpp"
#include "core/plan/planner.hpp"

namespace guestfrag::planner {

/// A maximal stretch of a stream that is contiguous in both VCN and LCN: what one move
/// carries.
struct Piece {
    std::int64_t vcn = 0;
    std::int64_t lcn = 0;
    std::int64_t clusters = 0;
};

/// The stream's allocated runs merged into pieces, in VCN order. O(runs).
[[nodiscard]] std::vector<Piece> pieces_of(const Stream& stream);

/// Sizes in clusters of the stream's fragments (docs/metrics.md: holes do not break one).
[[nodiscard]] std::vector<std::int64_t> fragment_sizes(const Stream& stream);

/// Free clusters a strategy may write to (free ∩ allowed), searched best-fit in two tiers:
/// room outside `avoid` (e.g. the MFT zone) first, room touching it only when nothing else
/// is large enough. One index: an extent that touches `avoid` is judged by its largest part
/// outside it, so the first tier costs extra only for the few extents that touch `avoid`.
class Pool {
public:
    Pool(const ClusterSet& free, ClusterSet allowed, ClusterSet avoid);

    struct Fit {
        std::int64_t lcn = 0;
        bool avoided = false;  ///< only a region touching `avoid` was large enough
    };
    [[nodiscard]] std::optional<Fit> best_fit(std::int64_t clusters) const;
    /// The first room of `clusters` clusters at or after `lcn` outside `avoid`, looking at no
    /// more than `visits` extents: the place nearest after a stream read just before.
    [[nodiscard]] std::optional<std::int64_t> first_fit_from(std::int64_t lcn, std::int64_t clusters,
                                                             std::size_t visits) const;
    /// [lo, hi) must lie inside one extent of the pool.
    void take(std::int64_t lo, std::int64_t hi);
    /// Adds the allowed part of [lo, hi), which must not be in the pool yet.
    void give(std::int64_t lo, std::int64_t hi);
    /// Removes whatever part of [lo, hi) is in the pool; returns what it removed.
    ClusterSet take_all_in(std::int64_t lo, std::int64_t hi);

    [[nodiscard]] std::int64_t largest() const { return all_.largest(); }
    [[nodiscard]] const FreeIndex& all() const { return all_; }

private:
    ClusterSet allowed_;
    ClusterSet avoid_;
    FreeIndex all_;
};

/// Builds a plan: emits whole-stream moves, keeps the budgets, the growth model and the
/// list of skipped streams. One per make_plan call.
class Builder {
public:
    Builder(const VolumeMap& volume, const std::vector<Layer>& layers, const PlanOptions& options,
            Plan& plan);

    [[nodiscard]] const VolumeMap& volume() const { return volume_; }
    [[nodiscard]] const PlanOptions& options() const { return options_; }
    [[nodiscard]] GrowthModel& growth() { return growth_; }
    [[nodiscard]] Plan& plan() { return plan_; }
    [[nodiscard]] std::uint64_t moved_bytes() const { return moved_bytes_; }

    /// The placement order (effective_order), nullopt for strategies without one.
    [[nodiscard]] const std::optional<PlacementOrder>& order() const { return order_; }
    /// Whether streams are placed in an order other than by size.
    [[nodiscard]] bool ordered() const { return !sequence_.empty(); }
    /// Indices into volume().streams in placement order, every stream once; empty for the
    /// size order.
    [[nodiscard]] const std::vector<std::size_t>& sequence() const { return sequence_; }
    /// Position of stream `index` in sequence(); only when ordered().
    [[nodiscard]] std::size_t rank(std::size_t index) const { return rank_[index]; }

    /// The --exclude glob the stream's file matches, nullopt when none does (or none given).
    [[nodiscard]] std::optional<std::string> excluded_by(const Stream& stream) const;
    /// Whether moving `clusters` more would pass --max-moved.
    [[nodiscard]] bool over_moved_budget(std::int64_t clusters) const;
    /// Why writing [lcn, lcn + clusters) would pass --max-growth, nullopt when it fits.
    [[nodiscard]] std::optional<std::string> over_growth_budget(std::int64_t lcn,
                                                                std::int64_t clusters) const;
    [[nodiscard]] std::string moved_budget_reason() const;

    /// Moves the whole stream to [destination, destination + allocated clusters): one move
    /// per piece, pieces laid end to end in VCN order. Records the bytes, and the growth under --max-growth.
    void move_whole(const Stream& stream, std::span<const Piece> pieces, std::int64_t destination);
    /// Moves `clusters` clusters of the stream from VCN `vcn` (at LCN `from`, contiguous) to
    /// `destination`: one move. Records the bytes, and the growth under --max-growth.
    void move_part(const Stream& stream, std::int64_t vcn, std::int64_t from, std::int64_t destination,
                   std::int64_t clusters);
    void skip(const Stream& stream, std::string reason);

private:
    const VolumeMap& volume_;
    const PlanOptions& options_;
    Plan& plan_;
    GrowthModel growth_;
    std::uint64_t moved_bytes_ = 0;
    std::optional<PlacementOrder> order_;
    std::vector<std::size_t> sequence_;
    std::vector<std::size_t> rank_;
};

/// The strategies (docs/planner.md §5–§8); each fills builder.plan().
void plan_defrag(Builder& builder, bool thin_safe, const Progress& progress);
void plan_consolidate(Builder& builder, const Progress& progress);
void plan_optimize(Builder& builder, const Progress& progress);
void plan_shrink(Builder& builder, const Progress& progress);

/// Defrag leaves a stream alone when every fragment is at least this big (docs/design.md §5).
inline constexpr std::uint64_t kLeaveAloneBytes = 64ull << 20;
/// How often (in streams or granules) the strategies report progress.
inline constexpr std::uint64_t kProgressEvery = 4096;

/// The streams the moves from index `from` on belong to (runs of consecutive moves of one
/// stream, each once), for strategies that cut their plan: (mft_record, stream label).
[[nodiscard]] std::vector<std::pair<std::uint64_t, std::string>> streams_in(const std::vector<Move>& moves,
                                                                            std::size_t from);

/// Byte counts in reasons and notes: "12582912 bytes" (exact, so tests and scripts can parse it).
[[nodiscard]] std::string bytes_text(std::uint64_t bytes);

}  // namespace guestfrag::planner
