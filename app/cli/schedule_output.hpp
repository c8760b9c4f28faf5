// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "core/schedule/schedule.hpp"

namespace guestfrag::cli {

/// What a schedule was made from, for its output.
struct ScheduleSource {
    std::string plan_path;
    std::uint64_t allocation_digest = 0;  ///< the plan's identity, for calendar UIDs
    ScheduleOptions options;
};

/// The table for people: one row per batch (start, end, duration, moves, bytes, rate).
void print_schedule(std::ostream& out, const Schedule& schedule, const ScheduleSource& source);

/// The guestfrag.schedule.v1 document (docs/design.md §6, contract; docs/schedule.md §5).
[[nodiscard]] std::string schedule_to_json(const Schedule& schedule, const ScheduleSource& source);

/// An RFC 5545 calendar: one VEVENT per batch, times in UTC, CRLF line ends, lines folded
/// at 75 octets. `stamp` is the DTSTAMP of every event (when the calendar was made).
[[nodiscard]] std::string schedule_to_ics(const Schedule& schedule, const ScheduleSource& source,
                                          Instant stamp);

/// `text` folded for iCalendar: CRLF after at most 75 octets, continuation lines start
/// with one space; never splits a UTF-8 sequence. `text` holds one content line, no CRLF.
[[nodiscard]] std::string fold_ics_line(const std::string& text);

/// `text` escaped as an iCalendar TEXT value (backslash, semicolon, comma, newline).
[[nodiscard]] std::string escape_ics_text(const std::string& text);

}  // namespace guestfrag::cli
