// SPDX-License-Identifier: GPL-2.0-or-later
// The scheduler (core/schedule): window grammar, local time across DST changes, and
// batches that keep the plan's order, hold whole moves, stay inside window occurrences and
// never exceed the rate, the IOPS or the per-window cap. Expected numbers are worked out by
// hand in the comments; every schedule is also checked against an independent model of
// the windows that reads the wall clock with localtime_r.
#include <catch2/catch.hpp>

#include <time.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "core/error.hpp"
#include "core/schedule/local_time.hpp"
#include "core/schedule/schedule.hpp"
#include "core/schedule/window.hpp"
#include "support/time_zone.hpp"

using namespace guestfrag;
using test::TimeZone;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

/// An instant given in UTC: utc(2026, 3, 29, 1, 0) is 2026-03-29T01:00:00Z.
Instant utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
    return std::chrono::sys_days{std::chrono::year{y} / mo / d} + std::chrono::hours{h} +
           std::chrono::minutes{mi} + std::chrono::seconds{s};
}

/// A wall-clock reading of the local zone.
LocalTime local(int y, unsigned mo, unsigned d, int h = 0, int mi = 0) {
    return std::chrono::local_days{std::chrono::year{y} / mo / d} + std::chrono::hours{h} +
           std::chrono::minutes{mi};
}

Window window(const std::string& text) {
    const auto parsed = parse_window(text);
    INFO(parsed.error);
    REQUIRE(parsed.value);
    return *parsed.value;
}

Instant instant(const std::string& text) {
    const auto parsed = parse_instant(text);
    INFO(parsed.error);
    REQUIRE(parsed.value);
    return *parsed.value;
}

/// A plan with 4 KiB clusters whose moves have these cluster counts.
Plan plan_of(const std::vector<std::int64_t>& clusters) {
    Plan plan;
    plan.identity.cluster_size = 4096;
    std::int64_t lcn = 1000;
    for (const std::int64_t c : clusters) {
        plan.moves.push_back(
            Move{static_cast<std::uint64_t>(plan.moves.size() + 64), "$DATA", 0, lcn, lcn + 1'000'000, c});
        lcn += c;
    }
    return plan;
}

/// `count` moves of `mib` MiB each (256 clusters of 4 KiB per MiB).
Plan plan_of_mib(std::size_t count, std::int64_t mib) {
    return plan_of(std::vector<std::int64_t>(count, 256 * mib));
}

/// Independent model of the windows: open at `t` when the wall clock (localtime_r) reads a
/// weekday and time inside a window's span, or inside the span of one that began the day
/// before and crosses midnight.
bool open_at(const std::vector<Window>& windows, Instant t) {
    if (windows.empty()) return true;
    ::tzset();
    const std::time_t when = t.time_since_epoch().count();
    std::tm fields{};
    REQUIRE(::localtime_r(&when, &fields) != nullptr);
    const int minute = fields.tm_hour * 60 + fields.tm_min;
    const int today = fields.tm_wday;
    const int yesterday = (today + 6) % 7;
    for (const Window& w : windows) {
        const int start = static_cast<int>(w.start.count());
        const int end = static_cast<int>(w.end.count());
        if (end > start) {
            if (w.days[today] && minute >= start && minute < end) return true;
        } else {
            if (w.days[today] && minute >= start) return true;
            if (w.days[yesterday] && minute < end) return true;
        }
    }
    return false;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

/// Every promise of make_schedule, checked from the plan and the options alone.
void check_schedule(const Plan& plan, const ScheduleOptions& options, const Schedule& schedule) {
    REQUIRE(schedule.moves == plan.moves.size());
    std::size_t next = 0;
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < schedule.batches.size(); ++k) {
        const Batch& b = schedule.batches[k];
        INFO("batch " << k << " moves " << b.first_move << "-" << b.last_move);
        // Order kept, whole moves only, nothing left out or repeated.
        REQUIRE(b.first_move == next);
        REQUIRE(b.last_move >= b.first_move);
        next = b.last_move + 1;
        std::uint64_t bytes = 0;
        std::uint64_t ios = 0;
        for (std::size_t m = b.first_move; m <= b.last_move; ++m) {
            const std::uint64_t move_bytes = static_cast<std::uint64_t>(plan.moves[m].clusters) * 4096;
            bytes += move_bytes;
            ios += 2 * ceil_div(move_bytes, kMiB);  // read and write, in IOs of at most 1 MiB
        }
        CHECK(b.bytes == bytes);
        CHECK(b.ios == ios);
        total += bytes;
        // Limits: bytes / (end − start) ≤ rate, ios / (end − start) ≤ iops.
        const auto seconds = static_cast<std::uint64_t>((b.end - b.start).count());
        CHECK(b.end > b.start);
        if (options.rate) CHECK(bytes <= options.rate * seconds);
        if (options.iops) CHECK(ios <= options.iops * seconds);
        if (options.max_per_window) CHECK(bytes <= options.max_per_window);
        // Inside one window occurrence, after the start.
        CHECK(b.start >= options.start);
        for (Instant t = b.start; t < b.end; t += std::chrono::minutes{1}) {
            INFO("at " << iso_local(t));
            REQUIRE(open_at(options.windows, t));
        }
        REQUIRE(open_at(options.windows, b.end - 1s));
        if (k > 0) {
            // A different occurrence from the batch before: the windows close in between.
            const Batch& before = schedule.batches[k - 1];
            bool closed = false;
            for (Instant t = before.end; t < b.start && !closed; t += std::chrono::minutes{1})
                closed = !open_at(options.windows, t);
            CHECK(closed);
            CHECK(before.end <= b.start);
        }
    }
    CHECK(next == plan.moves.size());
    CHECK(schedule.bytes == total);
}

Schedule scheduled(const Plan& plan, const ScheduleOptions& options) {
    const Schedule schedule = make_schedule(plan, options);
    check_schedule(plan, options, schedule);
    return schedule;
}

std::string failure_of(const Plan& plan, const ScheduleOptions& options) {
    try {
        (void)make_schedule(plan, options);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Unsupported);
        return e.what();
    }
    FAIL("make_schedule did not fail");
    return {};
}

}  // namespace

TEST_CASE("schedule formulas: IOs of at most 1 MiB, duration is the slower limit", "[schedule]") {
    // A move reads and writes its data: 2 · ceil(bytes / 1 MiB) IOs.
    CHECK(move_ios(0) == 0);
    CHECK(move_ios(4096) == 2);
    CHECK(move_ios(kMiB) == 2);
    CHECK(move_ios(kMiB + 1) == 4);
    CHECK(move_ios(10 * kMiB) == 20);
    CHECK(move_ios(10 * kMiB, 4 * kMiB) == 6);  // ceil(10/4) = 3 reads + 3 writes

    ScheduleOptions o;
    o.rate = 3 * kMiB;
    CHECK(batch_seconds(10 * kMiB, 20, o) == 4);  // 10/3 = 3.33 → 4 s
    o.iops = 4;
    CHECK(batch_seconds(10 * kMiB, 20, o) == 5);  // 20 IOs / 4 IOPS = 5 s > 4 s
    o.rate = 0;
    CHECK(batch_seconds(10 * kMiB, 21, o) == 6);  // ceil(21 / 4)
    CHECK(batch_seconds(0, 0, o) == 0);

    CHECK(duration_text(35) == "35s");
    CHECK(duration_text(4 * 60 + 5) == "4m 05s");
    CHECK(duration_text(2 * 3600 + 3 * 60 + 4) == "2h 03m 04s");
    CHECK(duration_text(2 * 86400 + 3 * 3600 + 4 * 60 + 5) == "2d 03h 04m");
}

TEST_CASE("window grammar", "[schedule][window]") {
    const Window weekdays = window("Mon-Fri 22:00-06:00");
    CHECK(weekdays.days == std::array<bool, 7>{false, true, true, true, true, true, false});  // Sun..Sat
    CHECK(weekdays.start == 22h);
    CHECK(weekdays.end == 6h);
    CHECK(weekdays.text == "Mon-Fri 22:00-06:00");

    CHECK(window("Sat,Sun 00:00-24:00").days ==
          std::array<bool, 7>{true, false, false, false, false, false, true});
    CHECK(window("Sat,Sun 00:00-24:00").end == 24h);
    CHECK(window("daily 01:00-05:00").days == std::array<bool, 7>{true, true, true, true, true, true, true});
    CHECK(window("  22:00-06:00 ").days == window("daily 22:00-06:00").days);
    // Ranges wrap past Sunday: Fri, Sat, Sun, Mon.
    CHECK(window("Fri-Mon 20:00-08:00").days ==
          std::array<bool, 7>{true, true, false, false, false, true, true});
    CHECK(window("monday,WED,friday 9:30-10:45").days ==
          std::array<bool, 7>{false, true, false, true, false, true, false});
    CHECK(window("monday,WED,friday 9:30-10:45").start == 9h + 30min);
    CHECK(window("weekdays 18:00-23:00").days == window("Mon-Fri 18:00-23:00").days);
    CHECK(window("weekends 18:00-23:00").days == window("Sat,Sun 18:00-23:00").days);

    for (const char* bad :
         {"", "Mon-Fry 22:00-06:00", "Mon-Fri", "Mon-Fri 22:00", "Mon-Fri 25:00-06:00", "Mon-Fri 22:00-06:60",
          "Mon-Fri 24:00-06:00", "Mon-Fri 22:00-24:30", "Mon,,Fri 1:00-2:00", "Mon-Fri 22:00 - 06:00",
          "Mon-Fri 2200-0600", "Mon-Fri 22:0-06:00", "Mon-Fri x:00-06:00"}) {
        INFO("'" << bad << "'");
        const auto parsed = parse_window(bad);
        CHECK_FALSE(parsed.value);
        CHECK_FALSE(parsed.error.empty());
    }
    CHECK_THAT(parse_window("Mon-Fry 22:00-06:00").error, Catch::Contains("unknown day 'fry'"));
    CHECK_THAT(parse_window("Mon-Fri 25:00-06:00").error, Catch::Contains("'25:00' is not a time of day"));
}

TEST_CASE("start times: local, UTC and with offsets", "[schedule][window]") {
    REQUIRE(TimeZone::installed("Europe/Berlin"));  // tzdata is a build dependency
    const TimeZone zone("Europe/Berlin");
    CHECK(instant("2026-11-23T22:00") == utc(2026, 11, 23, 21, 0));       // CET = UTC+1
    CHECK(instant("2026-07-01 22:00:30") == utc(2026, 7, 1, 20, 0, 30));  // CEST = UTC+2
    CHECK(instant("2026-11-23") == utc(2026, 11, 22, 23, 0));
    CHECK(instant("2026-11-23T22:00Z") == utc(2026, 11, 23, 22, 0));
    CHECK(instant("2026-11-23T22:00-05:00") == utc(2026, 11, 24, 3, 0));
    CHECK(instant("2026-11-23T22:00+0530") == utc(2026, 11, 23, 16, 30));
    for (const char* bad : {"tomorrow", "2026-13-01T00:00", "2026-02-29T00:00", "2026-11-23T24:00",
                            "2026-11-23T22", "2026-11-23T22:00+1", "2026-11-23X22:00", "26-11-23T22:00"}) {
        INFO(bad);
        CHECK_FALSE(parse_instant(bad).value);
    }
    CHECK(iso_local(utc(2026, 11, 23, 21, 0)) == "2026-11-23T22:00:00+01:00");
    CHECK(iso_local(utc(2026, 7, 1, 20, 0, 30)) == "2026-07-01T22:00:30+02:00");
}

TEST_CASE("local time on DST change days (Europe/Berlin)", "[schedule][dst]") {
    REQUIRE(TimeZone::installed("Europe/Berlin"));  // tzdata is a build dependency
    const TimeZone zone("Europe/Berlin");
    // 2026-03-29: 02:00 CET (01:00Z) jumps to 03:00 CEST. 01:59 is 00:59Z, 03:00 is 01:00Z.
    CHECK(from_local(local(2026, 3, 29, 1, 59)) == utc(2026, 3, 29, 0, 59));
    CHECK(from_local(local(2026, 3, 29, 3, 0)) == utc(2026, 3, 29, 1, 0));
    // 02:30 never happens: it means the instant of the change, when the clock shows 03:00.
    CHECK(from_local(local(2026, 3, 29, 2, 0)) == utc(2026, 3, 29, 1, 0));
    CHECK(from_local(local(2026, 3, 29, 2, 30)) == utc(2026, 3, 29, 1, 0));
    CHECK(instant("2026-03-29T02:30") == utc(2026, 3, 29, 1, 0));
    // 2026-10-25: 03:00 CEST (01:00Z) goes back to 02:00 CET. 02:30 happens twice (00:30Z
    // and 01:30Z): the first one. 03:00 happens once, in CET: 02:00Z.
    CHECK(from_local(local(2026, 10, 25, 2, 30)) == utc(2026, 10, 25, 0, 30));
    CHECK(from_local(local(2026, 10, 25, 3, 0)) == utc(2026, 10, 25, 2, 0));
    CHECK(to_local(utc(2026, 10, 25, 1, 30)) == local(2026, 10, 25, 2, 30));
    CHECK(iso_local(utc(2026, 10, 25, 0, 30)) == "2026-10-25T02:30:00+02:00");
    CHECK(iso_local(utc(2026, 10, 25, 1, 30)) == "2026-10-25T02:30:00+01:00");

    // Night window 22:00-06:00: 22:00 CET (21:00Z) to 06:00 CEST (04:00Z) is 7 h in spring,
    // 22:00 CEST (20:00Z) to 06:00 CET (05:00Z) is 9 h in autumn, 8 h on other nights.
    const Window night = window("daily 22:00-06:00");
    using std::chrono::local_days;
    const auto spring = night.occurrence_on(local_days{std::chrono::year{2026} / 3 / 28});
    REQUIRE(spring);
    CHECK(spring->start == utc(2026, 3, 28, 21, 0));
    CHECK(spring->end == utc(2026, 3, 29, 4, 0));
    CHECK(spring->length() == 7h);
    const auto autumn = night.occurrence_on(local_days{std::chrono::year{2026} / 10 / 24});
    REQUIRE(autumn);
    CHECK(autumn->start == utc(2026, 10, 24, 20, 0));
    CHECK(autumn->end == utc(2026, 10, 25, 5, 0));
    CHECK(autumn->length() == 9h);
    CHECK(night.occurrence_on(local_days{std::chrono::year{2026} / 3 / 29})->length() == 8h);

    // A window starting in the skipped hour opens at the change: 03:00 CEST (01:00Z) to
    // 05:00 CEST (03:00Z) = 2 h. One lying wholly inside it does not happen that day.
    const auto skipped =
        window("daily 02:30-05:00").occurrence_on(local_days{std::chrono::year{2026} / 3 / 29});
    REQUIRE(skipped);
    CHECK(skipped->start == utc(2026, 3, 29, 1, 0));
    CHECK(skipped->length() == 2h);
    CHECK_FALSE(window("daily 02:10-02:50").occurrence_on(local_days{std::chrono::year{2026} / 3 / 29}));
    CHECK(window("daily 02:10-02:50").occurrence_on(local_days{std::chrono::year{2026} / 3 / 30})->length() ==
          40min);
}

TEST_CASE("schedules on DST change nights hold 7 h and 9 h of work (Europe/Berlin)", "[schedule][dst]") {
    REQUIRE(TimeZone::installed("Europe/Berlin"));  // tzdata is a build dependency
    const TimeZone zone("Europe/Berlin");
    // 60 MiB moves at 1 MiB/s take 60 s each: 7 h = 420 moves, 8 h = 480, 9 h = 540.
    ScheduleOptions o;
    o.rate = kMiB;
    o.windows = {window("daily 22:00-06:00")};

    SECTION("spring forward, 2026-03-29") {
        o.start = instant("2026-03-28T12:00");
        const Plan plan = plan_of_mib(1000, 60);
        const Schedule s = scheduled(plan, o);
        REQUIRE(s.batches.size() == 3);
        CHECK(s.batches[0].moves() == 420);
        CHECK(s.batches[0].window.length() == 7h);
        CHECK(iso_local(s.batches[0].start) == "2026-03-28T22:00:00+01:00");
        CHECK(iso_local(s.batches[0].end) == "2026-03-29T06:00:00+02:00");
        CHECK(s.batches[1].moves() == 480);
        CHECK(iso_local(s.batches[1].start) == "2026-03-29T22:00:00+02:00");
        CHECK(s.batches[2].moves() == 100);  // 1000 − 420 − 480
        CHECK(s.batches[2].end - s.batches[2].start == 100min);
    }
    SECTION("fall back, 2026-10-25") {
        o.start = instant("2026-10-24T12:00");
        const Plan plan = plan_of_mib(1000, 60);
        const Schedule s = scheduled(plan, o);
        REQUIRE(s.batches.size() == 2);
        CHECK(s.batches[0].moves() == 540);
        CHECK(s.batches[0].window.length() == 9h);
        CHECK(iso_local(s.batches[0].start) == "2026-10-24T22:00:00+02:00");
        CHECK(iso_local(s.batches[0].end) == "2026-10-25T06:00:00+01:00");
        CHECK(s.batches[1].moves() == 460);  // 1000 − 540, fits the next 8 h night (480)
    }
    SECTION("a move of 7.5 h skips the short night") {
        // One move of 27,000 MiB at 1 MiB/s = 27,000 s = 7.5 h: not in the 7 h night, in the next 8 h one.
        o.start = instant("2026-03-28T12:00");
        const Plan plan = plan_of({27'000 * 256});
        const Schedule s = scheduled(plan, o);
        REQUIRE(s.batches.size() == 1);
        CHECK(iso_local(s.batches[0].start) == "2026-03-29T22:00:00+02:00");
        CHECK(s.batches[0].end - s.batches[0].start == 7h + 30min);
    }
}

TEST_CASE("schedules on DST change nights (America/New_York)", "[schedule][dst]") {
    REQUIRE(TimeZone::installed("America/New_York"));  // tzdata is a build dependency
    const TimeZone zone("America/New_York");
    // 2026-03-08: 02:00 EST (07:00Z) jumps to 03:00 EDT; 2026-11-01: 02:00 EDT (06:00Z) goes
    // back to 01:00 EST.
    const Window night = window("Sat 22:00-06:00");
    using std::chrono::local_days;
    const auto spring = night.occurrence_on(local_days{std::chrono::year{2026} / 3 / 7});
    REQUIRE(spring);
    CHECK(spring->start == utc(2026, 3, 8, 3, 0));  // 22:00 EST = 03:00Z
    CHECK(spring->end == utc(2026, 3, 8, 10, 0));   // 06:00 EDT = 10:00Z
    CHECK(spring->length() == 7h);
    const auto autumn = night.occurrence_on(local_days{std::chrono::year{2026} / 10 / 31});
    REQUIRE(autumn);
    CHECK(autumn->start == utc(2026, 11, 1, 2, 0));  // 22:00 EDT = 02:00Z
    CHECK(autumn->end == utc(2026, 11, 1, 11, 0));   // 06:00 EST = 11:00Z
    CHECK(autumn->length() == 9h);
    // 01:30 happens twice on 2026-11-01: the first, 01:30 EDT = 05:30Z; 02:00 EST = 07:00Z.
    const auto repeated =
        window("daily 01:30-02:00").occurrence_on(local_days{std::chrono::year{2026} / 11 / 1});
    REQUIRE(repeated);
    CHECK(repeated->start == utc(2026, 11, 1, 5, 30));
    CHECK(repeated->length() == 90min);
    CHECK(iso_local(repeated->start) == "2026-11-01T01:30:00-04:00");
    CHECK(iso_local(repeated->end) == "2026-11-01T02:00:00-05:00");

    // Moves of 60 MiB at 1 MiB/s (60 s each) on Saturday nights: 7 h = 420 moves in March,
    // 8 h = 480 on the next, 9 h = 540 in November.
    ScheduleOptions o;
    o.rate = kMiB;
    o.windows = {night};
    o.start = instant("2026-03-07T00:00");
    Schedule s = scheduled(plan_of_mib(1000, 60), o);
    REQUIRE(s.batches.size() == 3);
    CHECK(s.batches[0].moves() == 420);
    CHECK(iso_local(s.batches[0].end) == "2026-03-08T06:00:00-04:00");
    CHECK(s.batches[1].moves() == 480);
    CHECK(iso_local(s.batches[1].start) == "2026-03-14T22:00:00-04:00");
    o.start = instant("2026-10-31T00:00");
    s = scheduled(plan_of_mib(1000, 60), o);
    REQUIRE(s.batches.size() == 2);
    CHECK(s.batches[0].moves() == 540);
    CHECK(iso_local(s.batches[0].end) == "2026-11-01T06:00:00-05:00");
}

TEST_CASE("without windows a plan is one batch from the start", "[schedule]") {
    const TimeZone zone("UTC");
    ScheduleOptions o;
    o.start = utc(2026, 6, 1, 12, 0);
    o.rate = 3 * kMiB;
    // 10 moves of 1 MiB: 10 MiB / 3 MiB/s = 3.33 → 4 s.
    Schedule s = scheduled(plan_of_mib(10, 1), o);
    REQUIRE(s.batches.size() == 1);
    CHECK(s.batches[0].start == o.start);
    CHECK(s.batches[0].end == o.start + 4s);
    CHECK(s.batches[0].first_move == 0);
    CHECK(s.batches[0].last_move == 9);
    CHECK(s.batches[0].window.end == kForever);
    // 20 IOs at 4 IOPS = 5 s: the slower limit wins.
    o.iops = 4;
    s = scheduled(plan_of_mib(10, 1), o);
    CHECK(s.batches[0].end == o.start + 5s);
    // An empty plan has no batches.
    CHECK(scheduled(Plan{}, o).batches.empty());
}

TEST_CASE("starts the schedule cannot represent are refused, never looped on", "[schedule][hostile]") {
    const TimeZone zone("UTC");
    for (const char* late : {"8000-01-01", "9000-01-01T00:00Z", "9999-12-31T23:59:59+14:00"}) {
        INFO(late);
        const auto parsed = parse_instant(late);
        CHECK_FALSE(parsed.value);
        CHECK(parsed.error == "'" + std::string(late) + "': schedules start no later than the year 7999");
    }
    CHECK(parse_instant("7999-12-31T23:59:59Z").value == utc(7999, 12, 31, 23, 59, 59));
    // The core refuses them too, with and without windows (both used to loop forever).
    ScheduleOptions o;
    o.rate = kMiB;
    for (const Instant start : {utc(8000, 1, 1, 0, 0), kForever, kForever + std::chrono::hours{24 * 365}}) {
        o.start = start;
        o.windows.clear();
        CHECK_THROWS_WITH((void)make_schedule(plan_of_mib(3, 1), o), "a schedule cannot start after the year 7999");
        o.windows = {*parse_window("daily 01:00-05:00").value};
        CHECK_THROWS_WITH((void)make_schedule(plan_of_mib(3, 1), o), "a schedule cannot start after the year 7999");
    }
    // The last accepted start still schedules: one batch of 3 s.
    o.windows.clear();
    o.start = utc(7999, 12, 31, 23, 59, 59);
    const Schedule s = make_schedule(plan_of_mib(3, 1), o);
    REQUIRE(s.batches.size() == 1);
    CHECK(s.batches[0].end == o.start + std::chrono::seconds{3});
}

TEST_CASE("batches keep the order and hold whole moves only", "[schedule]") {
    const TimeZone zone("UTC");
    ScheduleOptions o;
    o.rate = kMiB;
    o.start = utc(2026, 6, 1, 0, 0);
    o.windows = {window("daily 01:00-02:00")};
    // 3600 s at 1 MiB/s = 3600 MiB per window; moves of 1000 MiB: 3 fit (3000 s), a fourth
    // would need 4000 s.
    Schedule s = scheduled(plan_of_mib(7, 1000), o);
    REQUIRE(s.batches.size() == 3);
    CHECK(s.batches[0].first_move == 0);
    CHECK(s.batches[0].last_move == 2);
    CHECK(s.batches[0].start == utc(2026, 6, 1, 1, 0));
    CHECK(s.batches[0].end == utc(2026, 6, 1, 1, 50));
    CHECK(s.batches[1].first_move == 3);
    CHECK(s.batches[1].last_move == 5);
    CHECK(s.batches[1].start == utc(2026, 6, 2, 1, 0));
    CHECK(s.batches[2].first_move == 6);
    CHECK(s.batches[2].last_move == 6);
    CHECK(s.batches[2].end == utc(2026, 6, 3, 1, 0) + 1000s);

    // A small move after a large one waits for it: order is kept even when a later move
    // would fill the gap. 3000 MiB then 1000 MiB: 4000 s > 3600 s.
    s = scheduled(plan_of({3000 * 256, 1000 * 256, 500 * 256}), o);
    REQUIRE(s.batches.size() == 2);
    CHECK(s.batches[0].last_move == 0);
    CHECK(s.batches[1].first_move == 1);
    CHECK(s.batches[1].last_move == 2);
}

TEST_CASE("the IOPS limit counts reads and writes of at most 1 MiB", "[schedule]") {
    const TimeZone zone("UTC");
    ScheduleOptions o;
    o.rate = 100 * kMiB;
    o.iops = 10;
    o.start = utc(2026, 6, 1, 0, 0);
    o.windows = {window("daily 00:10-00:11")};
    // 1000 one-cluster moves: 2 IOs each. 60 s · 10 IOPS = 600 IOs = 300 moves per window.
    const Schedule s = scheduled(plan_of(std::vector<std::int64_t>(1000, 1)), o);
    REQUIRE(s.batches.size() == 4);
    CHECK(s.batches[0].moves() == 300);
    CHECK(s.batches[0].ios == 600);
    CHECK(s.batches[0].end - s.batches[0].start == 60s);
    CHECK(s.batches[3].moves() == 100);
    CHECK(s.batches[3].end - s.batches[3].start == 20s);  // 200 IOs / 10
    CHECK(s.batches[3].start == utc(2026, 6, 4, 0, 10));
}

TEST_CASE("max_per_window caps the data of one window occurrence", "[schedule]") {
    const TimeZone zone("UTC");
    ScheduleOptions o;
    o.rate = 1024 * kMiB;
    o.max_per_window = 3 * kMiB;
    o.start = utc(2026, 6, 1, 0, 0);
    o.windows = {window("daily 22:00-06:00")};
    // 10 moves of 1 MiB, 3 MiB a night: 3 + 3 + 3 + 1.
    const Schedule s = scheduled(plan_of_mib(10, 1), o);
    REQUIRE(s.batches.size() == 4);
    for (std::size_t k = 0; k < 3; ++k) CHECK(s.batches[k].bytes == 3 * kMiB);
    CHECK(s.batches[3].bytes == kMiB);
    // Occurrence 0 is the one from 2026-05-31 22:00, open at the start.
    CHECK(s.batches[0].start == utc(2026, 6, 1, 0, 0));
    CHECK(s.batches[1].start == utc(2026, 6, 1, 22, 0));
    CHECK(s.batches[3].start == utc(2026, 6, 3, 22, 0));

    // A move larger than the cap fits no window.
    o.max_per_window = kMiB;
    CHECK_THAT(failure_of(plan_of({256, 512}), o),
               Catch::StartsWith("move 1: it moves 2.0 MiB, more than the 1.0 MiB"));
    // Windows that cover all time are one occurrence that never closes.
    o.windows = {window("daily 00:00-24:00")};
    CHECK_THAT(failure_of(plan_of({256, 256}), o), Catch::Contains("never closes"));
}

TEST_CASE("windows crossing midnight belong to the day they start on", "[schedule]") {
    const TimeZone zone("UTC");
    ScheduleOptions o;
    o.rate = kMiB;
    o.windows = {window("Mon-Fri 22:00-06:00")};
    // Friday 2026-11-20 noon. Friday's window runs to Saturday 06:00; there is none on
    // Saturday or Sunday night; the next opens Monday 22:00.
    o.start = utc(2026, 11, 20, 12, 0);
    // 8 h at 1 MiB/s = 28,800 MiB per night; moves of 20,000 MiB: one per night.
    Schedule s = scheduled(plan_of_mib(3, 20'000), o);
    REQUIRE(s.batches.size() == 3);
    CHECK(s.batches[0].start == utc(2026, 11, 20, 22, 0));
    CHECK(s.batches[0].window.end == utc(2026, 11, 21, 6, 0));
    CHECK(s.batches[1].start == utc(2026, 11, 23, 22, 0));  // Monday
    CHECK(s.batches[2].start == utc(2026, 11, 24, 22, 0));
    // Starting inside Friday's window on Saturday 03:00: the rest of it (3 h = 10,800 MiB).
    o.start = utc(2026, 11, 21, 3, 0);
    s = scheduled(plan_of_mib(3, 10'000), o);
    REQUIRE(s.batches.size() == 2);
    CHECK(s.batches[0].start == utc(2026, 11, 21, 3, 0));
    CHECK(s.batches[0].moves() == 1);
    CHECK(s.batches[1].start == utc(2026, 11, 23, 22, 0));
    CHECK(s.batches[1].moves() == 2);  // 20,000 s of 28,800
}

TEST_CASE("several windows are a union: overlapping and touching ones merge", "[schedule]") {
    const TimeZone zone("UTC");
    ScheduleOptions o;
    o.rate = kMiB;
    o.start = utc(2026, 11, 23, 0, 0);  // Monday
    // Mon 20:00-23:00 and Mon 22:00-02:00 overlap: one occurrence 20:00-02:00 (6 h = 21,600 s).
    o.windows = {window("Mon 20:00-23:00"), window("Mon 22:00-02:00")};
    Schedule s = scheduled(plan_of_mib(4, 5000), o);  // 4 · 5000 s = 20,000 s
    REQUIRE(s.batches.size() == 1);
    CHECK(s.batches[0].start == utc(2026, 11, 23, 20, 0));
    CHECK(s.batches[0].window.end == utc(2026, 11, 24, 2, 0));
    CHECK(s.batches[0].end == utc(2026, 11, 23, 20, 0) + 20'000s);

    // Sat 00:00-24:00 and Sun 00:00-24:00 touch: one 48 h occurrence holds a 30 h move.
    o.windows = {window("Sat,Sun 00:00-24:00")};
    s = scheduled(plan_of_mib(1, 30 * 3600), o);
    REQUIRE(s.batches.size() == 1);
    CHECK(s.batches[0].start == utc(2026, 11, 28, 0, 0));
    CHECK(s.batches[0].window.end == utc(2026, 11, 30, 0, 0));
    CHECK(s.batches[0].end == utc(2026, 11, 29, 6, 0));

    // Disjoint windows give separate occurrences in time order.
    o.windows = {window("Tue 01:00-02:00"), window("Mon 23:00-23:30")};
    s = scheduled(plan_of_mib(3, 1800), o);  // 30 min each
    REQUIRE(s.batches.size() == 2);
    CHECK(s.batches[0].start == utc(2026, 11, 23, 23, 0));
    CHECK(s.batches[0].moves() == 1);
    CHECK(s.batches[1].start == utc(2026, 11, 24, 1, 0));
    CHECK(s.batches[1].moves() == 2);
}

TEST_CASE("a move that fits in no window occurrence is an error naming it", "[schedule]") {
    const TimeZone zone("UTC");
    ScheduleOptions o;
    o.rate = kMiB;
    o.start = utc(2026, 6, 1, 0, 0);
    o.windows = {window("daily 01:00-02:00")};
    // Move 2 needs 2 h at 1 MiB/s; every occurrence lasts 1 h.
    const std::string why = failure_of(plan_of({256, 256, 7200 * 256, 256}), o);
    CHECK_THAT(why, Catch::StartsWith("move 2: it needs 2h 00m 00s (7.03 GiB at 1.0 MiB/s)"));
    CHECK_THAT(why, Catch::Contains("the longest lasts 1h 00m 00s"));
    // The IOPS limit alone: 4 MiB = 8 IOs at 1 IOPS = 8 s in a 1-minute window is fine, 61 s is not.
    o.rate = 0;
    o.iops = 1;
    o.windows = {window("daily 01:00-01:01")};
    CHECK(make_schedule(plan_of({4 * 256}), o).batches.size() == 1);
    CHECK_THAT(failure_of(plan_of({31 * 256}), o), Catch::StartsWith("move 0: it needs 1m 02s"));
    CHECK_THROWS_AS((void)make_schedule(plan_of({1}), ScheduleOptions{}), Error);  // no limit at all
}

TEST_CASE("random plans over several windows and a DST change keep every promise", "[schedule][dst]") {
    REQUIRE(TimeZone::installed("Europe/Berlin"));  // tzdata is a build dependency
    const TimeZone zone("Europe/Berlin");
    std::mt19937_64 random(7);
    std::uniform_int_distribution<std::int64_t> clusters(1, 256 * 400);  // up to 400 MiB
    for (int round = 0; round < 6; ++round) {
        std::vector<std::int64_t> sizes(300);
        for (auto& c : sizes) c = clusters(random);
        const Plan plan = plan_of(sizes);
        ScheduleOptions o;
        // About 300 · 200 MiB = 60 GiB: at 512 KiB/s some 33 h, at 2 IOPS (~120,000 IOs) some 17 h.
        o.rate = (round % 3 == 2) ? 0 : 512 * 1024;
        o.iops = (round % 3 == 1) ? 0 : 2;
        o.max_per_window = (round % 2 == 0) ? 0 : 8 * 1024 * kMiB;
        o.start = instant("2026-03-24T15:07");
        o.windows = {window("Mon-Fri 22:00-06:00"), window("Sat,Sun 10:00-14:00"), window("Sun 13:00-15:30")};
        INFO("round " << round);
        const Schedule s = scheduled(plan, o);
        CHECK(s.batches.size() > 1);
    }
}

TEST_CASE("carrying a schedule out: a move starts at its batch's start and only inside a window",
          "[schedule][apply]") {
    const TimeZone zone("UTC");
    // Four moves of one cluster at 4 KiB/s (1 s each), at most two per night: moves 0-1 on
    // Monday night (2026-11-23 22:00Z), moves 2-3 on Tuesday night.
    const Plan plan = plan_of({1, 1, 1, 1});
    ScheduleOptions options;
    options.rate = 4096;
    options.max_per_window = 2 * 4096;
    options.windows = {window("daily 22:00-06:00")};
    options.start = utc(2026, 11, 23, 12);
    const Schedule s = make_schedule(plan, options);
    REQUIRE(s.batches.size() == 2);
    REQUIRE(s.batches[0].start == utc(2026, 11, 23, 22));
    REQUIRE(s.batches[1].start == utc(2026, 11, 24, 22));
    REQUIRE(s.batches[1].first_move == 2);

    // Before its batch: waits for the batch's start.
    CHECK(move_may_start(s, options, 0, utc(2026, 11, 23, 12)) == utc(2026, 11, 23, 22));
    CHECK(move_may_start(s, options, 2, utc(2026, 11, 23, 22, 0, 2)) == utc(2026, 11, 24, 22));
    // Its batch under way, inside the night: at once.
    CHECK(move_may_start(s, options, 1, utc(2026, 11, 23, 22, 0, 1)) == utc(2026, 11, 23, 22, 0, 1));
    CHECK(move_may_start(s, options, 3, utc(2026, 11, 25, 1)) == utc(2026, 11, 25, 1));
    // The work overran the night (Tuesday 07:00, the window closed at 06:00): the next night.
    CHECK(move_may_start(s, options, 1, utc(2026, 11, 24, 7)) == utc(2026, 11, 24, 22));
    // A move in no batch, and no windows at all: at once.
    CHECK(move_may_start(s, options, 4, utc(2026, 11, 24, 7)) == utc(2026, 11, 24, 7));
    ScheduleOptions always = options;
    always.windows.clear();
    always.max_per_window = 0;
    const Schedule one = make_schedule(plan, always);
    CHECK(move_may_start(one, always, 3, utc(2026, 11, 24, 7)) == utc(2026, 11, 24, 7));
    CHECK(move_may_start(one, always, 0, utc(2026, 11, 23, 11)) == utc(2026, 11, 23, 12));
}
