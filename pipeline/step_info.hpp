// SPDX-License-Identifier: GPL-2.0-or-later
// What a front end says about the step apply or compact is in: its name and what its
// progress counts (each step restarts the count, in its own unit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "pipeline/apply.hpp"
#include "pipeline/compact.hpp"

namespace guestfrag {

/// What a step's (done, total) count.
enum class StepUnit { None, Records, DiskOffset, Moves, Streams };

struct StepInfo {
    std::string_view name;  ///< "copying the disk": lower case, for "Step 2 of 6: NAME"
    StepUnit unit = StepUnit::None;
};

[[nodiscard]] StepInfo step_info(ApplyStep step) noexcept;
[[nodiscard]] StepInfo step_info(CompactStep step) noexcept;

/// A step's time left as people read it: "45 s", "3 min 5 s", "2 h 10 min" (seconds
/// rounded up; a negative time is 0 s).
[[nodiscard]] std::string duration_text(double seconds);

/// Seconds a step runs before its time left is estimated: its first moments (opening
/// files, a first burst the rate limiter allows) say little about its pace.
inline constexpr double kEstimateAfterSeconds = 1.0;

/// The time left of a step `seconds` into it with `done` of `total` counted, at the pace so
/// far; nullopt before kEstimateAfterSeconds, with nothing done or everything done.
[[nodiscard]] std::optional<double> seconds_left(double seconds, std::uint64_t done, std::uint64_t total);

}  // namespace guestfrag
