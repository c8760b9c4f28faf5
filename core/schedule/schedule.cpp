// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/schedule/schedule.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include "core/error.hpp"

namespace guestfrag {

namespace {

using std::chrono::days;
using std::chrono::seconds;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

/// A year and a week: every weekday pattern and every DST change of the zone's year.
constexpr seconds kLookAhead = days{371};

std::uint64_t add_saturated(std::uint64_t a, std::uint64_t b) { return a > kMax - b ? kMax : a + b; }

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

std::string move_name(std::size_t index) { return "move " + std::to_string(index); }

/// "512 bytes", "4.0 KiB", "300.0 MiB", "1.50 GiB".
std::string bytes_text(std::uint64_t bytes) {
    char text[64];
    if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
    if (bytes < (std::uint64_t{1} << 20)) {
        std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
        return text;
    }
    const double mib = static_cast<double>(bytes) / static_cast<double>(std::uint64_t{1} << 20);
    if (mib < 1024) {
        std::snprintf(text, sizeof text, "%.1f MiB", mib);
    } else {
        std::snprintf(text, sizeof text, "%.2f GiB", mib / 1024);
    }
    return text;
}

/// Seconds from `from` to `to` as a count that `batch_seconds` results compare with.
std::uint64_t room(const Interval& occurrence) {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(0, occurrence.length().count()));
}

/// `at` + `span`, no later than kForever.
Instant later(Instant at, std::uint64_t span) {
    const auto left = static_cast<std::uint64_t>((kForever - at).count());
    return span >= left ? kForever : at + seconds{static_cast<std::int64_t>(span)};
}

std::string limits_text(std::uint64_t bytes, std::uint64_t ios, const ScheduleOptions& o) {
    std::string text = bytes_text(bytes);
    if (o.rate) text += " at " + bytes_text(o.rate) + "/s";
    if (o.iops)
        text += std::string(o.rate ? "," : "") + " in " + std::to_string(ios) + " IOs at " +
                std::to_string(o.iops) + " IOPS";
    return text;
}

}  // namespace

std::uint64_t move_ios(std::uint64_t bytes, std::uint64_t io_size) { return 2 * ceil_div(bytes, io_size); }

std::uint64_t batch_seconds(std::uint64_t bytes, std::uint64_t ios, const ScheduleOptions& options) {
    const std::uint64_t by_rate = options.rate ? ceil_div(bytes, options.rate) : 0;
    const std::uint64_t by_iops = options.iops ? ceil_div(ios, options.iops) : 0;
    return std::max(by_rate, by_iops);
}

std::string duration_text(std::uint64_t total) {
    const std::uint64_t d = total / 86400;
    const std::uint64_t h = total / 3600 % 24;
    const std::uint64_t m = total / 60 % 60;
    const std::uint64_t s = total % 60;
    char text[64];
    if (d > 0) {
        std::snprintf(text, sizeof text, "%llud %02lluh %02llum", static_cast<unsigned long long>(d),
                      static_cast<unsigned long long>(h), static_cast<unsigned long long>(m));
    } else if (h > 0) {
        std::snprintf(text, sizeof text, "%lluh %02llum %02llus", static_cast<unsigned long long>(h),
                      static_cast<unsigned long long>(m), static_cast<unsigned long long>(s));
    } else if (m > 0) {
        std::snprintf(text, sizeof text, "%llum %02llus", static_cast<unsigned long long>(m),
                      static_cast<unsigned long long>(s));
    } else {
        std::snprintf(text, sizeof text, "%llus", static_cast<unsigned long long>(s));
    }
    return text;
}

Schedule make_schedule(const Plan& plan, const ScheduleOptions& options) {
    if (options.rate == 0 && options.iops == 0)
        throw Error(ErrorKind::Internal, "a schedule needs a rate or an IOPS limit");
    if (options.io_size == 0) throw Error(ErrorKind::Internal, "a schedule needs a positive IO size");
    // Near kForever every occurrence is empty or clamped and no move would ever be placed.
    if (options.start >= Instant{std::chrono::sys_days{std::chrono::year{kLastYear + 1} / 1 / 1}.time_since_epoch()})
        throw Error(ErrorKind::Unsupported, "a schedule cannot start after the year " + std::to_string(kLastYear));

    const std::size_t n = plan.moves.size();
    Schedule schedule;
    schedule.moves = n;
    std::vector<std::uint64_t> bytes(n);
    std::vector<std::uint64_t> ios(n);
    for (std::size_t i = 0; i < n; ++i) {
        const Move& move = plan.moves[i];
        if (move.clusters < 0) throw Error(ErrorKind::Corrupt, move_name(i) + ": negative cluster count");
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(move.clusters),
                                   std::uint64_t{plan.identity.cluster_size}, &bytes[i]))
            throw Error(ErrorKind::Corrupt, move_name(i) + ": it moves more than 2^64 bytes");
        ios[i] = move_ios(bytes[i], options.io_size);
        if (__builtin_add_overflow(schedule.bytes, bytes[i], &schedule.bytes))
            throw Error(ErrorKind::Corrupt, "the plan moves more than 2^64 bytes");
        schedule.ios = add_saturated(schedule.ios, ios[i]);
    }
    // What is left from move i on, for how long a merged occurrence needs to be followed.
    std::vector<std::uint64_t> rest_bytes(n + 1, 0);
    std::vector<std::uint64_t> rest_ios(n + 1, 0);
    for (std::size_t i = n; i-- > 0;) {
        rest_bytes[i] = add_saturated(rest_bytes[i + 1], bytes[i]);
        rest_ios[i] = add_saturated(rest_ios[i + 1], ios[i]);
    }

    const WindowSet windows(options.windows);
    Instant cursor = options.start;
    std::size_t i = 0;
    // The start of the first occurrence move i did not fit in, and the longest one since.
    bool waiting = false;
    Instant due_since{};
    seconds longest{0};
    while (i < n) {
        // An occurrence is followed until it holds all that is left or it has lasted the
        // look-ahead: then it never closes, because the pattern covers a whole year.
        const std::uint64_t all_left = batch_seconds(rest_bytes[i], rest_ios[i], options);
        const Instant merge_until = later(
            cursor,
            add_saturated(std::max<std::uint64_t>(all_left, kLookAhead.count()), seconds{days{1}}.count()));
        std::optional<Interval> occurrence = windows.next(cursor, merge_until);
        if (!occurrence) {
            throw Error(ErrorKind::Unsupported,
                        move_name(i) + ": the windows are not open at any time in the 16 days from " +
                            iso_local(cursor));
        }
        if (occurrence->end >= merge_until) occurrence->end = kForever;

        std::uint64_t batch_bytes = 0;
        std::uint64_t batch_ios = 0;
        std::size_t j = i;
        for (; j < n; ++j) {
            const std::uint64_t more_bytes = batch_bytes + bytes[j];  // ≤ schedule.bytes: no overflow
            const std::uint64_t more_ios = add_saturated(batch_ios, ios[j]);
            if (options.max_per_window != 0 && more_bytes > options.max_per_window) break;
            if (batch_seconds(more_bytes, more_ios, options) > room(*occurrence)) break;
            batch_bytes = more_bytes;
            batch_ios = more_ios;
        }

        if (j == i) {
            // Move i does not fit in this occurrence on its own.
            if (options.max_per_window != 0 && bytes[i] > options.max_per_window) {
                throw Error(ErrorKind::Unsupported,
                            move_name(i) + ": it moves " + bytes_text(bytes[i]) + ", more than the " +
                                bytes_text(options.max_per_window) + " one window may hold");
            }
            const std::uint64_t needs = batch_seconds(bytes[i], ios[i], options);
            if (occurrence->end == kForever) {
                throw Error(ErrorKind::Unsupported, move_name(i) + ": it needs " + duration_text(needs) +
                                                        " (" + limits_text(bytes[i], ios[i], options) +
                                                        "), more than any window holds");
            }
            if (!waiting) {
                waiting = true;
                due_since = occurrence->start;
                longest = seconds{0};
            }
            longest = std::max(longest, occurrence->length());
            if (occurrence->start - due_since > kLookAhead) {
                throw Error(ErrorKind::Unsupported,
                            move_name(i) + ": it needs " + duration_text(needs) + " (" +
                                limits_text(bytes[i], ios[i], options) +
                                ") but no window occurrence in the year from " + iso_local(due_since) +
                                " is that long (the longest lasts " +
                                duration_text(static_cast<std::uint64_t>(longest.count())) + ")");
            }
            cursor = occurrence->end;
            continue;
        }

        waiting = false;
        Batch batch;
        batch.start = occurrence->start;
        batch.end = later(occurrence->start, batch_seconds(batch_bytes, batch_ios, options));
        batch.first_move = i;
        batch.last_move = j - 1;
        batch.bytes = batch_bytes;
        batch.ios = batch_ios;
        batch.window = *occurrence;
        schedule.batches.push_back(batch);
        i = j;
        cursor = occurrence->end;
        if (i < n && cursor == kForever) {
            throw Error(ErrorKind::Unsupported,
                        move_name(i) + ": the window occurrence from " + iso_local(occurrence->start) +
                            " never closes (the windows cover all time) and already holds the " +
                            bytes_text(options.max_per_window) + " one window may hold");
        }
    }
    return schedule;
}

Instant move_may_start(const Schedule& schedule, const ScheduleOptions& options, std::size_t move, Instant now) {
    const auto batch = std::lower_bound(schedule.batches.begin(), schedule.batches.end(), move,
                                        [](const Batch& b, std::size_t m) { return b.last_move < m; });
    if (batch == schedule.batches.end() || move < batch->first_move) return now;
    Instant at = std::max(now, batch->start);
    const WindowSet windows(options.windows);
    // next() looks 16 days ahead; make_schedule found an occurrence within the look-ahead
    // for every move, so one is found within as many steps.
    for (Instant from = at; from < at + kLookAhead; from += days{16}) {
        if (const std::optional<Interval> occurrence = windows.next(from, from)) return std::max(at, occurrence->start);
    }
    return at;
}

}  // namespace guestfrag
