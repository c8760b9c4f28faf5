// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan/plan.hpp"
#include "core/schedule/window.hpp"

namespace guestfrag {

/// Largest IO a move is executed with: a move reads and writes its data in IOs of at most
/// this size (docs/schedule.md §3).
inline constexpr std::uint64_t kScheduleIoSize = std::uint64_t{1} << 20;

/// How a plan is to be spread over time. At least one of `rate` and `iops` is set.
struct ScheduleOptions {
    std::uint64_t rate = 0;            ///< most bytes of data moved per second; 0: no limit
    std::uint64_t iops = 0;            ///< most IOs (reads plus writes) per second; 0: no limit
    std::uint64_t max_per_window = 0;  ///< most data moved in one window occurrence; 0: no cap
    std::uint64_t io_size = kScheduleIoSize;
    Instant start;                ///< nothing runs before this instant
    std::vector<Window> windows;  ///< their union is when moves may run; none: always
};

/// Consecutive whole moves run inside one window occurrence, from `start` to `end`.
struct Batch {
    Instant start;
    Instant end;
    std::size_t first_move = 0;  ///< 0-based index into Plan::moves, inclusive
    std::size_t last_move = 0;   ///< inclusive
    std::uint64_t bytes = 0;     ///< data moved: Σ clusters · cluster size
    std::uint64_t ios = 0;       ///< Σ move_ios over the batch's moves
    Interval window;             ///< the window occurrence holding the batch (clipped to the start)

    [[nodiscard]] std::size_t moves() const { return last_move - first_move + 1; }
};

/// A plan's moves in batches, in plan order.
struct Schedule {
    std::vector<Batch> batches;
    std::size_t moves = 0;
    std::uint64_t bytes = 0;
    std::uint64_t ios = 0;
};

/// IOs of a move of `bytes` bytes: it reads them and writes them in IOs of at most
/// `io_size`: 2 · ceil(bytes / io_size).
[[nodiscard]] std::uint64_t move_ios(std::uint64_t bytes, std::uint64_t io_size = kScheduleIoSize);

/// Whole seconds a batch of `bytes` bytes in `ios` IOs takes at the options' limits:
/// max(ceil(bytes / rate), ceil(ios / iops)), leaving out a limit that is not set.
[[nodiscard]] std::uint64_t batch_seconds(std::uint64_t bytes, std::uint64_t ios,
                                          const ScheduleOptions& options);

/// "2d 03h 04m", "2h 03m 04s", "4m 05s", "35s": a duration for people.
[[nodiscard]] std::string duration_text(std::uint64_t seconds);

/// Splits `plan`'s moves, in order, into batches: each window occurrence (after
/// `options.start`) takes as many of the next moves as fit in it whole, within its length
/// at the limits and within max_per_window, and runs them from its start. So every batch
/// lies inside one occurrence, bytes / (end − start) ≤ rate and ios / (end − start) ≤ iops.
/// Throws Error(Unsupported, "move N: ...") when move N fits in no occurrence of the year
/// after the point where it is due (or exceeds max_per_window), Error(Unsupported) when the
/// windows leave no occurrence at all, Error(Corrupt) when a move's byte count overflows 64
/// bits, and Error(Internal) when neither rate nor iops is set.
/// Cost: O(moves) plus a few time conversions per window per day of the schedule.
[[nodiscard]] Schedule make_schedule(const Plan& plan, const ScheduleOptions& options);

/// When move `move` of `schedule` (made with `options`) may start, its turn having come at
/// `now`, when the schedule is carried out (docs/schedule.md §7): not before its batch's
/// start, and inside an occurrence of the windows, so a batch whose work overran its
/// occurrence goes on at the start of the next one. `now` itself when it may start at
/// once, or the move is in no batch. Cost: as WindowSet::next.
[[nodiscard]] Instant move_may_start(const Schedule& schedule, const ScheduleOptions& options, std::size_t move,
                                     Instant now);

}  // namespace guestfrag
