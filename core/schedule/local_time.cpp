// SPDX-License-Identifier: GPL-2.0-or-later
// The C library's view of the local time zone (localtime_r honouring TZ), wrapped once.
#include "core/schedule/local_time.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace guestfrag {

namespace {

using std::chrono::seconds;

/// localtime_r of `t` after re-reading TZ; false when the C library cannot represent `t`.
bool local_fields(Instant t, std::tm& fields) {
    // POSIX lets localtime_r skip re-reading TZ; tzset makes a changed TZ count at once.
    ::tzset();
    const std::time_t when = static_cast<std::time_t>(t.time_since_epoch().count());
    return ::localtime_r(&when, &fields) != nullptr;
}

}  // namespace

seconds utc_offset(Instant t) {
    std::tm fields{};
    if (!local_fields(t, fields)) return seconds{0};
    return seconds{fields.tm_gmtoff};
}

std::string zone_abbreviation(Instant t) {
    std::tm fields{};
    if (!local_fields(t, fields) || fields.tm_zone == nullptr) return "UTC";
    return fields.tm_zone;
}

LocalTime to_local(Instant t) { return LocalTime{t.time_since_epoch() + utc_offset(t)}; }

Instant from_local(LocalTime local) {
    // The reading taken as if it were UTC; the true instant lies within a day of it.
    const Instant naive{local.time_since_epoch()};
    const seconds before = utc_offset(naive - std::chrono::days{1});
    const seconds after = utc_offset(naive + std::chrono::days{1});
    const Instant with_before = naive - before;
    const Instant with_after = naive - after;
    const bool before_fits = to_local(with_before) == local;
    const bool after_fits = to_local(with_after) == local;
    if (before_fits && after_fits) return std::min(with_before, with_after);  // repeated: the first
    if (before_fits) return with_before;
    if (after_fits) return with_after;
    // Skipped by a change to a larger offset (after > before): the change lies in
    // (with_after, with_before]; find its first second.
    Instant lo = std::min(with_before, with_after);
    Instant hi = std::max(with_before, with_after);
    const seconds offset_lo = utc_offset(lo);
    while (hi - lo > seconds{1}) {
        const Instant mid = lo + (hi - lo) / 2;
        if (utc_offset(mid) == offset_lo) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return hi;
}

std::string iso_local(Instant t) {
    const seconds offset = utc_offset(t);
    const LocalTime local = LocalTime{t.time_since_epoch() + offset};
    const auto day = std::chrono::floor<std::chrono::days>(local);
    const std::chrono::year_month_day date{day};
    const std::chrono::hh_mm_ss<seconds> time{local - day};
    const long long off_minutes =
        std::chrono::duration_cast<std::chrono::minutes>(offset < seconds{0} ? -offset : offset).count();
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02lld:%02lld:%02lld%c%02lld:%02lld",
                  static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                  static_cast<unsigned>(date.day()), static_cast<long long>(time.hours().count()),
                  static_cast<long long>(time.minutes().count()),
                  static_cast<long long>(time.seconds().count()), offset < seconds{0} ? '-' : '+',
                  off_minutes / 60, off_minutes % 60);
    return text;
}

}  // namespace guestfrag
