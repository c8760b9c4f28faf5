// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <ostream>
#include <string>

#include "core/plan/frontier.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// How long read_plan waits for a pipe or FIFO that gives no data before it gives up.
inline constexpr std::chrono::milliseconds kPlanPipeTimeout{30'000};

/// Reads a `guestfrag.plan.v1` JSON file. Throws Error(NotFound) / Error(Corrupt, "...")
/// for unreadable or malformed documents (wrong schema, missing or out-of-range fields,
/// absurd numbers), naming the first offending move ("move 17: ..."). By what the file is:
/// a directory is Error(Unsupported); a pipe, FIFO or device is read as long as it delivers
/// (`<(…)` and /dev/stdin work), Error(Io) after `pipe_timeout` without data, and
/// Error(Corrupt) when it ends before a byte (a FIFO nobody writes to). The parser reads as
/// it goes and stops at the first byte that is not JSON. `partition_read`, when given, is
/// called with the plan's partition as soon as the parser has read a valid one: near the
/// top of a plan guestfrag wrote, long before its moves.
[[nodiscard]] Plan read_plan(const std::string& path,
                             std::chrono::milliseconds pipe_timeout = kPlanPipeTimeout,
                             const std::function<void(int)>& partition_read = {});

/// A plan being read on a thread of its own. The input's analysis needs only the plan's
/// partition, so it runs beside the reading of the moves (a plan of a million moves is
/// 90 MB of JSON, about 1.5 s to read).
class PendingPlan {
public:
    /// `read` reads the plan and calls its argument with the plan's partition when it knows
    /// it (read_plan's `partition_read`).
    using Reader = std::function<Plan(const std::function<void(int)>&)>;

    /// A plan read already.
    explicit PendingPlan(Plan plan);
    /// Starts `read` on a thread of its own.
    explicit PendingPlan(Reader read);
    /// Waits for the reading.
    ~PendingPlan() = default;
    PendingPlan(const PendingPlan&) = delete;
    PendingPlan& operator=(const PendingPlan&) = delete;

    /// The plan's partition, as soon as it is read; throws what the reading threw before.
    [[nodiscard]] int partition();
    /// The plan (call once); throws what the reading threw, and Error(Corrupt) when the
    /// plan's partition is not the one partition() gave (a document that names it twice).
    [[nodiscard]] Plan take();

private:
    std::promise<int> partition_read_;
    std::shared_future<int> partition_;
    std::future<Plan> plan_;  ///< last: destroyed first, it waits for the thread that uses the rest
};

/// Writes the `guestfrag.plan.v1` JSON text of `plan` with its summary figures, and the
/// trade-off curve under "frontier" when one is given (read_plan ignores it), to `out` a
/// move at a time. Stream errors are the caller's to check.
void write_plan_json(std::ostream& out, const Plan& plan, const VolumeMap& before, const Frontier* frontier = nullptr);

/// write_plan_json's text as one string (for plans small enough to hold twice).
[[nodiscard]] std::string plan_to_json(const Plan& plan, const VolumeMap& before, const Frontier* frontier = nullptr);

}  // namespace guestfrag
