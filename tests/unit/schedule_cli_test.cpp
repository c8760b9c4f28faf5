// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag schedule` on a real defrag plan of a generated image: the guestfrag.schedule.v1
// contract and its invariants, the iCalendar output as RFC 5545 defines it, the table, and
// bad input. Every figure is recomputed here from the plan file itself.
#include <catch2/catch.hpp>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"
#include "support/time_zone.hpp"

using namespace guestfrag;
using test::TimeZone;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;

void write(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

/// A defrag plan of a small generated disk, made once by `guestfrag plan`.
const fs::path& plan_path() {
    static const fs::path path = [] {
        MkImageOptions o;
        o.disk_size = 48ull << 20;
        o.files = 300;
        o.seed = 31;
        const fs::path image = test::generated_image("schedule-cli", o);
        // ctest runs test cases as parallel processes: each writes its own copy and renames
        // it into place, so no process ever reads a half-written plan.
        const fs::path out = test::scratch_dir() / "schedule-cli-plan.json";
        const fs::path mine =
            test::scratch_dir() / ("schedule-cli-plan." + std::to_string(::getpid()) + ".json");
        const auto r = test::run_cli({"plan", image.string(), "--strategy", "defrag", "-o", mine.string()});
        INFO(r.err);
        REQUIRE(r.status == 0);
        fs::rename(mine, out);
        return out;
    }();
    return path;
}

const Json& plan() {
    static const Json doc = Json::parse(test::file_contents(plan_path()));
    return doc;
}

std::uint64_t move_bytes(std::size_t index) {
    return plan()["moves"][index]["clusters"].get<std::uint64_t>() *
           plan()["identity"]["cluster_size"].get<std::uint64_t>();
}

/// Seconds since the epoch of the UTC date and time in groups 1-6 (year, month, day, hour,
/// minute, second) of `m`.
std::int64_t utc_seconds(const std::smatch& m) {
    std::tm fields{};
    fields.tm_year = std::stoi(m[1]) - 1900;
    fields.tm_mon = std::stoi(m[2]) - 1;
    fields.tm_mday = std::stoi(m[3]);
    fields.tm_hour = std::stoi(m[4]);
    fields.tm_min = std::stoi(m[5]);
    fields.tm_sec = std::stoi(m[6]);
    return static_cast<std::int64_t>(::timegm(&fields));
}

/// ISO 8601 "2026-11-23T22:00:00+01:00" as an instant (seconds since the epoch), by hand.
std::int64_t parse_iso(const std::string& text) {
    static const std::regex kIso(R"((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})([+-])(\d{2}):(\d{2}))");
    std::smatch m;
    REQUIRE(std::regex_match(text, m, kIso));
    const std::int64_t offset = (std::stoi(m[8]) * 3600 + std::stoi(m[9]) * 60) * (m[7] == "-" ? -1 : 1);
    return utc_seconds(m) - offset;
}

/// "20261123T210000Z" as an instant.
std::int64_t parse_ics_utc(const std::string& text) {
    static const std::regex kUtc(R"((\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z)");
    std::smatch m;
    REQUIRE(std::regex_match(text, m, kUtc));
    return utc_seconds(m);
}

/// Local wall-clock minute of the day and the date at `t`, read with localtime_r.
std::tm local_fields(std::int64_t t) {
    ::tzset();
    const std::time_t when = t;
    std::tm fields{};
    REQUIRE(::localtime_r(&when, &fields) != nullptr);
    return fields;
}

test::CommandResult schedule(std::vector<std::string> args) {
    args.insert(args.begin(), {"schedule", plan_path().string()});
    return test::run_cli(args);
}

Json schedule_json(const std::vector<std::string>& args) {
    std::vector<std::string> all = args;
    all.push_back("--json");
    const auto r = schedule(all);
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    return Json::parse(r.out);
}

/// The contract fields and every invariant of a --json document against the plan file.
void check_contract(const Json& doc, std::uint64_t rate, std::uint64_t iops, std::uint64_t cap) {
    CHECK(doc["schema"] == "guestfrag.schedule.v1");
    const std::size_t moves = plan()["moves"].size();
    CHECK(doc["moves"] == moves);
    std::size_t next = 0;
    std::uint64_t total = 0;
    std::int64_t previous_end = 0;
    for (const Json& b : doc["batches"]) {
        INFO(b.dump());
        for (const char* key : {"start", "end", "bytes", "first_move", "last_move"}) REQUIRE(b.contains(key));
        const auto first = b["first_move"].get<std::size_t>();
        const auto last = b["last_move"].get<std::size_t>();
        REQUIRE(first == next);  // 0-based, in plan order, whole moves
        REQUIRE(last >= first);
        REQUIRE(last < moves);
        next = last + 1;
        std::uint64_t bytes = 0;
        std::uint64_t ios = 0;
        for (std::size_t m = first; m <= last; ++m) {
            bytes += move_bytes(m);
            ios += 2 * ((move_bytes(m) + kMiB - 1) / kMiB);
        }
        CHECK(b["bytes"] == bytes);
        CHECK(b["ios"] == ios);
        total += bytes;
        const std::int64_t start = parse_iso(b["start"]);
        const std::int64_t end = parse_iso(b["end"]);
        REQUIRE(end > start);
        CHECK(start >= previous_end);
        previous_end = end;
        const auto seconds = static_cast<std::uint64_t>(end - start);
        CHECK(b["seconds"] == seconds);
        if (rate) CHECK(bytes <= rate * seconds);  // bytes / (end − start) ≤ rate
        if (iops) CHECK(ios <= iops * seconds);
        if (cap) CHECK(bytes <= cap);
    }
    CHECK(next == moves);
    CHECK(doc["total_bytes"] == total);
    CHECK(total == plan()["summary"]["moved_bytes"].get<std::uint64_t>());
}

/// Octets of `text` split into lines at CRLF; false if any line feed comes without CR.
bool crlf_lines(const std::string& text, std::vector<std::string>& lines) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t lf = text.find('\n', pos);
        if (lf == std::string::npos || lf == pos || text[lf - 1] != '\r') return false;
        lines.push_back(text.substr(pos, lf - 1 - pos));
        pos = lf + 1;
    }
    return true;
}

}  // namespace

TEST_CASE("schedule --json follows guestfrag.schedule.v1 inside a nightly window", "[schedule][cli][json]") {
    REQUIRE(TimeZone::installed("Europe/Berlin"));  // tzdata is a build dependency
    const TimeZone zone("Europe/Berlin");
    REQUIRE(plan()["moves"].size() > 1);
    // A 10-minute window at 64 KiB/s (38.4 MiB a night at most) and a cap of a third of the
    // plan (but at least its largest move), so the plan needs several nights.
    std::uint64_t largest = 0;
    for (std::size_t m = 0; m < plan()["moves"].size(); ++m) largest = std::max(largest, move_bytes(m));
    const std::uint64_t cap = std::max(largest, plan()["summary"]["moved_bytes"].get<std::uint64_t>() / 3);
    const Json doc = schedule_json({"--rate", "64KiB/s", "--window", "daily 01:00-01:10", "--start",
                                    "2026-11-23T00:00", "--max-per-window", std::to_string(cap)});
    check_contract(doc, 64 * 1024, 0, cap);
    REQUIRE(doc["batches"].size() >= 3);
    CHECK(doc["start"] == "2026-11-23T00:00:00+01:00");
    CHECK(doc["rate"] == 64 * 1024);
    CHECK(doc["iops"].is_null());
    CHECK(doc["windows"] == Json::array({"daily 01:00-01:10"}));
    CHECK(doc["finish"] == doc["batches"].back()["end"]);
    int night = 23;
    for (const Json& b : doc["batches"]) {
        INFO(b.dump());
        // One batch a night, each from 01:00 CET (+01:00), ending by 01:10.
        CHECK(b["start"] == "2026-11-" + std::to_string(night) + "T01:00:00+01:00");
        const std::tm end = local_fields(parse_iso(b["end"]) - 1);
        CHECK(end.tm_mday == night);
        CHECK(end.tm_hour * 60 + end.tm_min < 70);
        CHECK(b["window_end"] == "2026-11-" + std::to_string(night) + "T01:10:00+01:00");
        ++night;
    }
}

TEST_CASE("schedule --json with --iops and several windows across a DST change",
          "[schedule][cli][json][dst]") {
    REQUIRE(TimeZone::installed("Europe/Berlin"));  // tzdata is a build dependency
    const TimeZone zone("Europe/Berlin");
    // 2026-03-28 is a Saturday; the night to Sunday 2026-03-29 loses an hour.
    const Json doc = schedule_json({"--iops", "3", "--rate", "1MiB/s", "--window", "Sat,Sun 22:00-06:00",
                                    "--window", "Mon-Fri 23:30-23:31", "--start", "2026-03-28T12:00"});
    check_contract(doc, kMiB, 3, 0);
    REQUIRE(!doc["batches"].empty());
    CHECK(doc["batches"][0]["start"] == "2026-03-28T22:00:00+01:00");
    for (const Json& b : doc["batches"]) {
        INFO(b.dump());
        const std::int64_t start = parse_iso(b["start"]);
        const std::int64_t end = parse_iso(b["end"]);
        // Inside a window by the wall clock: starts at 22:00 on Sat/Sun or 23:30 on Mon-Fri.
        const std::tm s = local_fields(start);
        const bool weekend_night = (s.tm_wday == 6 || s.tm_wday == 0) && s.tm_hour == 22 && s.tm_min == 0;
        const bool weekday_minute = s.tm_wday >= 1 && s.tm_wday <= 5 && s.tm_hour == 23 && s.tm_min == 30;
        CHECK((weekend_night || weekday_minute));
        // The Saturday night that ends on the spring-forward day is 7 h long, not 8.
        CHECK(end - start <=
              (weekday_minute ? 60 : (s.tm_mday == 28 && s.tm_mon == 2 ? 7 * 3600 : 8 * 3600)));
    }
    // The first night's window closes at 06:00 CEST: 7 h after 22:00 CET.
    CHECK(parse_iso(doc["batches"][0]["window_end"]) - parse_iso(doc["batches"][0]["start"]) == 7 * 3600);
    CHECK(doc["batches"][0]["window_end"] == "2026-03-29T06:00:00+02:00");
}

TEST_CASE("schedule without windows is one batch from --start", "[schedule][cli]") {
    REQUIRE(TimeZone::installed("America/New_York"));  // tzdata is a build dependency
    const TimeZone zone("America/New_York");
    const Json doc = schedule_json({"--rate", "20MiB/s", "--start", "2026-11-23T22:00"});
    check_contract(doc, 20 * kMiB, 0, 0);
    REQUIRE(doc["batches"].size() == 1);
    CHECK(doc["batches"][0]["start"] == "2026-11-23T22:00:00-05:00");
    const std::uint64_t bytes = doc["total_bytes"];
    const std::uint64_t expected = (bytes + 20 * kMiB - 1) / (20 * kMiB);  // ceil(bytes / rate)
    CHECK(doc["batches"][0]["seconds"] == expected);
    CHECK(doc["batches"][0]["window_end"].is_null());

    // Without --start: from now, rounded up to the next minute.
    const std::int64_t before = static_cast<std::int64_t>(std::time(nullptr));
    const Json now = schedule_json({"--rate", "20MiB/s"});
    const std::int64_t after = static_cast<std::int64_t>(std::time(nullptr));
    const std::int64_t start = parse_iso(now["start"]);
    CHECK(start % 60 == 0);
    CHECK(start >= before);
    CHECK(start <= after + 60);
}

TEST_CASE("schedule prints a table for people", "[schedule][cli]") {
    const TimeZone zone("UTC");
    const auto r =
        schedule({"--rate", "64KiB/s", "--window", "Mon-Fri 22:00-06:00", "--start", "2026-11-20T23:00"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("Schedule for " + plan_path().string()));
    CHECK_THAT(r.out, Catch::Contains("batch  start"));
    CHECK_THAT(r.out, Catch::Contains("Mon-Fri 22:00-06:00 (local time)"));
    CHECK_THAT(r.out, Catch::Contains("Fri 2026-11-20 23:00:00 UTC"));
    CHECK_THAT(r.out, Catch::Contains("Finishes "));
    // The times are the limits', and say so beside the device models' (impact).
    CHECK_THAT(r.out, Catch::Contains("at the limits above; a device slower than them takes longer"));

    // One value per --window: PLAN may come after it.
    const auto after = test::run_cli({"schedule", "--rate", "64KiB/s", "--window", "Mon-Fri 22:00-06:00",
                                      "--start", "2026-11-20T23:00", plan_path().string()});
    CHECK(after.status == 0);
    CHECK(after.out == r.out);
}

TEST_CASE("schedule --ics is an RFC 5545 calendar", "[schedule][cli][ics]") {
    REQUIRE(TimeZone::installed("Europe/Berlin"));  // tzdata is a build dependency
    const TimeZone zone("Europe/Berlin");
    const std::vector<std::string> args = {"--rate",  "64KiB/s",         "--window", "daily 01:00-01:10",
                                           "--start", "2026-11-23T00:00"};
    const Json doc = schedule_json(args);
    std::vector<std::string> ics_args = args;
    ics_args.push_back("--ics");
    const auto r = schedule(ics_args);
    INFO(r.err);
    REQUIRE(r.status == 0);

    // Every line ends in CRLF and holds at most 75 octets.
    std::vector<std::string> physical;
    REQUIRE(crlf_lines(r.out, physical));
    bool folded = false;
    for (const std::string& line : physical) {
        INFO(line);
        CHECK(line.size() <= 75);
        folded = folded || (!line.empty() && line[0] == ' ');
    }
    // Unfold (RFC 5545 §3.1: a CRLF followed by one space or tab is removed).
    std::vector<std::string> lines;
    for (const std::string& line : physical) {
        if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
            REQUIRE(!lines.empty());
            lines.back() += line.substr(1);
        } else {
            lines.push_back(line);
        }
    }
    REQUIRE(lines.size() > 4);
    CHECK(lines.front() == "BEGIN:VCALENDAR");
    CHECK(lines.back() == "END:VCALENDAR");
    CHECK(std::find(lines.begin(), lines.end(), "VERSION:2.0") != lines.end());
    CHECK(std::count_if(lines.begin(), lines.end(),
                        [](const std::string& l) { return l.rfind("PRODID:", 0) == 0; }) == 1);

    // One VEVENT per batch, each with UID, DTSTAMP, DTSTART and DTEND in UTC, SUMMARY.
    struct Event {
        std::map<std::string, std::string> fields;
    };
    std::vector<Event> events;
    bool inside = false;
    for (const std::string& line : lines) {
        if (line == "BEGIN:VEVENT") {
            REQUIRE_FALSE(inside);
            inside = true;
            events.emplace_back();
        } else if (line == "END:VEVENT") {
            REQUIRE(inside);
            inside = false;
        } else if (inside) {
            const std::size_t colon = line.find(':');
            REQUIRE(colon != std::string::npos);
            events.back().fields[line.substr(0, colon)] = line.substr(colon + 1);
        }
    }
    CHECK_FALSE(inside);
    REQUIRE(events.size() == doc["batches"].size());
    std::set<std::string> uids;
    for (std::size_t k = 0; k < events.size(); ++k) {
        const auto& f = events[k].fields;
        for (const char* key : {"UID", "DTSTAMP", "DTSTART", "DTEND", "SUMMARY"}) CHECK(f.count(key) == 1);
        uids.insert(f.at("UID"));
        CHECK(parse_ics_utc(f.at("DTSTART")) == parse_iso(doc["batches"][k]["start"]));
        CHECK(parse_ics_utc(f.at("DTEND")) == parse_iso(doc["batches"][k]["end"]));
        (void)parse_ics_utc(f.at("DTSTAMP"));
        // The plan path in DESCRIPTION makes its line long enough to need folding.
        CHECK_THAT(f.at("DESCRIPTION"), Catch::Contains("Plan " + plan_path().string() + "\\,"));
    }
    CHECK(uids.size() == events.size());
    CHECK(folded);
}

TEST_CASE("schedule reads a plan from a pipe or a process substitution", "[schedule][cli][hostile]") {
    // Images that are FIFOs are refused before they are opened; plans may come from one.
    const std::string cli = std::string(GUESTFRAG_CLI);
    const std::string plan = plan_path().string();
    const auto from_file = schedule({"--rate", "20MiB/s", "--json", "--start", "2026-11-23T00:00Z"});
    REQUIRE(from_file.status == 0);
    for (const std::string& command :
         {"cat '" + plan + "' | '" + cli + "' schedule /dev/stdin --rate 20MiB/s --json --start 2026-11-23T00:00Z",
          "'" + cli + "' schedule <(cat '" + plan + "') --rate 20MiB/s --json --start 2026-11-23T00:00Z"}) {
        INFO(command);
        const auto piped = test::run({"bash", "-c", command});
        CHECK(piped.status == 0);
        // The same batches; only the plan's name differs.
        CHECK(Json::parse(piped.out)["batches"] == Json::parse(from_file.out)["batches"]);
    }
}

TEST_CASE("schedule rejects bad input with one line and the right status", "[schedule][cli][errors]") {
    const fs::path missing = test::scratch_dir() / "schedule-cli-missing.json";
    fs::remove(missing);
    auto r = test::run_cli({"schedule", missing.string(), "--rate", "20MiB/s"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("guestfrag: error: " + missing.string() + ": "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

    const fs::path corrupt = test::scratch_dir() / "schedule-cli-corrupt.json";
    write(corrupt, "{\"schema\": \"guestfrag.plan.v1\", \"moves\": [");
    r = test::run_cli({"schedule", corrupt.string(), "--rate", "20MiB/s"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("guestfrag: error: " + corrupt.string() + ": "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

    // A move that fits in no window: 1 byte/s cannot move a cluster in one minute.
    r = schedule({"--rate", "1", "--window", "daily 01:00-01:01", "--start", "2026-11-23T00:00"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("guestfrag: error: " + plan_path().string() + ": move 0: it needs "));
    CHECK_THAT(r.err, Catch::Contains("the longest lasts 1m 00s"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

    // Usage errors: exit 1 with a message naming what is wrong.
    r = schedule({});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("needs --rate or --iops"));
    r = schedule({"--rate", "fast"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("'fast' is not a rate"));
    r = schedule({"--rate", "20MiB/s", "--window", "Mon-Fry 22:00-06:00"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("unknown day 'fry'"));
    r = schedule({"--rate", "20MiB/s", "--window", "Mon-Fri 22:00-30:00"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("'30:00' is not a time of day"));
    r = schedule({"--rate", "20MiB/s", "--start", "2026-02-30T22:00"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("no such date"));
    r = schedule({"--rate", "20MiB/s", "--start", "tonight"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("is not a start time"));
    // Year 9000 stood for "never" inside and such a start used to loop forever.
    r = schedule({"--rate", "20MiB/s", "--window", "daily 01:00-05:00", "--start", "9000-01-01T02:00Z"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("schedules start no later than the year 7999"));
    r = schedule({"--iops", "0"});
    CHECK(r.status == 1);
    r = schedule({"--rate", "20MiB/s", "--max-per-window", "1GiB"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("--max-per-window needs --window"));
    r = schedule({"--rate", "20MiB/s", "--json", "--ics"});
    CHECK(r.status == 1);
}
