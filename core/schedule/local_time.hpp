// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <string>

namespace guestfrag {

/// An instant, in whole seconds of UTC (Unix time).
using Instant = std::chrono::sys_seconds;
/// A wall-clock reading of the local time zone, in whole seconds.
using LocalTime = std::chrono::local_seconds;

// The local time zone is the C library's: the TZ environment variable (re-read on every
// call, so a changed TZ takes effect at once), else /etc/localtime. libstdc++ 12 has the
// calendar types of <chrono> but no time-zone database (no current_zone or zoned_time),
// so this file is the one place that asks the C library; everything else works on
// Instant and LocalTime.

/// UTC offset of the local time zone at `t` (local = UTC + offset). 0 when the C library
/// cannot represent `t`.
[[nodiscard]] std::chrono::seconds utc_offset(Instant t);

/// Abbreviation of the local time zone at `t` ("CET", "CEST", "EST", "UTC").
[[nodiscard]] std::string zone_abbreviation(Instant t);

/// The wall-clock reading at `t`.
[[nodiscard]] LocalTime to_local(Instant t);

/// The instant at which the wall clock reads `local`, for every reading, including those a
/// DST change skips or repeats:
///   - a reading that occurs twice (the repeated hour when clocks go back) means its first
///     occurrence, the one before the change;
///   - a reading that never occurs (the hour skipped when clocks go forward) means the
///     instant of the change itself: 02:30 on a day the clock jumps from 02:00 to 03:00
///     is the instant the clock shows 03:00.
/// The result is non-decreasing in `local`. Assumes at most one UTC offset change within a
/// day either side of `local`, which holds for every zone of the tz database.
[[nodiscard]] Instant from_local(LocalTime local);

/// ISO 8601 local time with its UTC offset: "2026-11-23T22:00:00+01:00".
[[nodiscard]] std::string iso_local(Instant t);

}  // namespace guestfrag
