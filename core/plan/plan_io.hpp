// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
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
/// it goes and stops at the first byte that is not JSON.
[[nodiscard]] Plan read_plan(const std::string& path,
                             std::chrono::milliseconds pipe_timeout = kPlanPipeTimeout);

/// Writes the `guestfrag.plan.v1` JSON text of `plan` with its summary figures, and the
/// trade-off curve under "frontier" when one is given (read_plan ignores it), to `out` a
/// move at a time. Stream errors are the caller's to check.
void write_plan_json(std::ostream& out, const Plan& plan, const VolumeMap& before, const Frontier* frontier = nullptr);

/// write_plan_json's text as one string (for plans small enough to hold twice).
[[nodiscard]] std::string plan_to_json(const Plan& plan, const VolumeMap& before, const Frontier* frontier = nullptr);

}  // namespace guestfrag
