// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/schedule/local_time.hpp"

namespace guestfrag {

/// A half-open span of time [start, end).
struct Interval {
    Instant start;
    Instant end;

    [[nodiscard]] std::chrono::seconds length() const { return end - start; }
    friend bool operator==(const Interval&, const Interval&) = default;
};

/// A recurring maintenance window in local time (docs/schedule.md §2): on each of `days`
/// from `start` to `end`. An end at or before the start is on the next day (the window
/// crosses midnight and belongs to the day it starts on).
struct Window {
    std::array<bool, 7> days{};     ///< indexed by weekday::c_encoding(): 0 = Sunday
    std::chrono::minutes start{0};  ///< since local midnight, 00:00 to 23:59
    std::chrono::minutes end{0};    ///< since local midnight, 00:00 to 24:00
    std::string text;               ///< as written, for messages and output

    /// The occurrence that starts on local day `day`, as real instants (so one lasting
    /// over a DST change is an hour shorter or longer than its wall-clock length); nullopt
    /// when the window is not open that day or the occurrence is empty (a window that lies
    /// entirely inside a skipped hour).
    [[nodiscard]] std::optional<Interval> occurrence_on(std::chrono::local_days day) const;
};

/// A parsed value or why the text is not one (a message naming the offending part).
template <typename T>
struct Parsed {
    std::optional<T> value;
    std::string error;
};

/// Parses "Mon-Fri 22:00-06:00", "Sat,Sun 00:00-24:00", "daily 01:00-05:00", "Fri-Mon
/// 20:00-08:00", "weekdays 18:00-23:00", "22:00-06:00" (no days: daily). Day names are
/// English, three letters or in full, any case; ranges wrap past Sunday.
[[nodiscard]] Parsed<Window> parse_window(std::string_view text);

/// Parses a start time "2026-11-23T22:00", "2026-11-23 22:00:30", "2026-11-23" (midnight),
/// local time unless it ends in "Z" or a UTC offset ("+01:00", "-0500"); local readings
/// resolve as from_local does. Years from kLastYear + 1 on are refused: schedules end at
/// kForever.
[[nodiscard]] Parsed<Instant> parse_instant(std::string_view text);

/// An instant later than any schedule: the end of a window occurrence that never ends.
inline constexpr Instant kForever{std::chrono::sys_days{std::chrono::year{9000} / 1 / 1}.time_since_epoch()};
/// The last year a schedule may start in, a thousand years before kForever so that even
/// the longest schedule ends by then (times are clamped to kForever, never past it).
inline constexpr int kLastYear = 7999;

/// The union of several windows; no windows at all means always open.
class WindowSet {
public:
    explicit WindowSet(std::vector<Window> windows) : windows_(std::move(windows)) {}

    [[nodiscard]] bool always_open() const { return windows_.empty(); }
    [[nodiscard]] const std::vector<Window>& windows() const { return windows_; }

    /// The first occurrence of the union that ends after `from`, its start clipped to
    /// `from`. Occurrences of all windows that overlap or touch are merged into one. Merging
    /// stops once the occurrence reaches `merge_until`: the result's end is then at or after
    /// `merge_until` and only a lower bound. nullopt when nothing is open in the 16 days
    /// after `from`. Always open: [from, kForever).
    /// Cost: a few C library time conversions per window per day looked at.
    [[nodiscard]] std::optional<Interval> next(Instant from, Instant merge_until) const;

private:
    std::vector<Window> windows_;
};

}  // namespace guestfrag
