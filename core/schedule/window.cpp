// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/schedule/window.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace guestfrag {

namespace {

using Days = std::chrono::days;
using std::chrono::hours;
using std::chrono::local_days;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::string_view kWindowExample = "e.g. \"Mon-Fri 22:00-06:00\" or \"daily 01:00-05:00\"";

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return text;
}

/// Reads exactly `count` decimal digits from the front of `text`.
std::optional<int> digits(std::string_view& text, std::size_t count) {
    if (text.size() < count) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < count; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
        value = value * 10 + (text[i] - '0');
    }
    text.remove_prefix(count);
    return value;
}

bool take(std::string_view& text, char c) {
    if (text.empty() || text.front() != c) return false;
    text.remove_prefix(1);
    return true;
}

/// Weekday number (0 = Sunday) of an English day name, three letters or in full.
std::optional<unsigned> day_number(const std::string& name) {
    static constexpr std::array<std::string_view, 7> kNames = {"sunday",   "monday", "tuesday", "wednesday",
                                                               "thursday", "friday", "saturday"};
    for (unsigned i = 0; i < kNames.size(); ++i)
        if (name == kNames[i] || name == kNames[i].substr(0, 3)) return i;
    return std::nullopt;
}

/// "HH:MM" or "H:MM", 00:00 to 24:00.
std::optional<minutes> time_of_day(std::string_view text) {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 2) return std::nullopt;
    std::string_view hh = text.substr(0, colon);
    std::string_view mm = text.substr(colon + 1);
    const auto h = digits(hh, hh.size());
    const auto m = digits(mm, 2);
    if (!h || !m || !mm.empty() || *h > 24 || *m > 59 || (*h == 24 && *m != 0)) return std::nullopt;
    return hours{*h} + minutes{*m};
}

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

/// Days of a day list ("Mon-Fri", "Sat,Sun", "Fri-Mon", "daily"); error text otherwise.
Parsed<std::array<bool, 7>> parse_days(std::string_view text) {
    std::array<bool, 7> day_set{};
    const std::string all = lower(text);
    if (all == "daily" || all == "everyday") {
        day_set.fill(true);
        return {day_set, {}};
    }
    if (all == "weekdays") return parse_days("mon-fri");
    if (all == "weekends" || all == "weekend") return parse_days("sat,sun");
    std::size_t pos = 0;
    while (pos <= all.size()) {
        const std::size_t comma = std::min(all.find(',', pos), all.size());
        const std::string item = all.substr(pos, comma - pos);
        const std::size_t dash = item.find('-');
        const std::string first_name = item.substr(0, dash);
        const std::string last_name = dash == std::string::npos ? first_name : item.substr(dash + 1);
        const auto first = day_number(first_name);
        const auto last = day_number(last_name);
        if (!first || !last) {
            const std::string& bad = first ? last_name : first_name;
            return {std::nullopt, "unknown day " + quoted(bad) +
                                      " (use Mon, Tue, Wed, Thu, Fri, Sat, Sun, ranges such as Mon-Fri, "
                                      "lists such as Sat,Sun, or daily)"};
        }
        // Ranges wrap past Sunday: Fri-Mon is Fri, Sat, Sun, Mon.
        for (unsigned d = *first;; d = (d + 1) % 7) {
            day_set[d] = true;
            if (d == *last) break;
        }
        pos = comma + 1;
    }
    return {day_set, {}};
}

}  // namespace

std::optional<Interval> Window::occurrence_on(local_days day) const {
    if (!days[std::chrono::weekday{day}.c_encoding()]) return std::nullopt;
    const minutes end_offset = end <= start ? end + Days{1} : end;
    const Instant opens = from_local(day + start);
    const Instant closes = from_local(day + end_offset);
    if (closes <= opens) return std::nullopt;
    return Interval{opens, closes};
}

Parsed<Window> parse_window(std::string_view text) {
    const std::string_view whole = trim(text);
    const std::string prefix = quoted(whole) + ": ";
    Window window;
    window.text = std::string(whole);

    // DAYS TIMES, or TIMES alone (daily).
    std::string_view days_text = "daily";
    std::string_view times_text = whole;
    const std::size_t space = whole.find_first_of(" \t");
    if (space != std::string_view::npos) {
        days_text = whole.substr(0, space);
        times_text = trim(whole.substr(space));
        if (times_text.find_first_of(" \t") != std::string_view::npos)
            return {std::nullopt, prefix + "expected DAYS HH:MM-HH:MM, " + std::string(kWindowExample)};
    }
    if (whole.empty())
        return {std::nullopt, "empty window: expected DAYS HH:MM-HH:MM, " + std::string(kWindowExample)};

    auto day_set = parse_days(days_text);
    if (!day_set.value) return {std::nullopt, prefix + day_set.error};
    window.days = *day_set.value;

    const std::size_t dash = times_text.find('-');
    if (dash == std::string_view::npos)
        return {std::nullopt, prefix + "expected a time range HH:MM-HH:MM, " + std::string(kWindowExample)};
    const std::string_view start_text = times_text.substr(0, dash);
    const std::string_view end_text = times_text.substr(dash + 1);
    const auto start = time_of_day(start_text);
    const auto end = time_of_day(end_text);
    if (!start || !end) {
        return {std::nullopt, prefix + quoted(start ? end_text : start_text) +
                                  " is not a time of day (HH:MM, 00:00 to 24:00)"};
    }
    if (*start == Days{1})
        return {std::nullopt, prefix + "a window cannot start at 24:00 (write 00:00 of the next day)"};
    window.start = *start;
    window.end = *end;
    return {std::move(window), {}};
}

Parsed<Instant> parse_instant(std::string_view text) {
    const std::string_view whole = trim(text);
    const std::string bad = quoted(whole) +
                            " is not a start time (YYYY-MM-DDTHH:MM[:SS], local time unless it ends in Z or "
                            "an offset such as +01:00)";
    std::string_view rest = whole;
    const auto y = digits(rest, 4);
    if (!y || !take(rest, '-')) return {std::nullopt, bad};
    const auto mo = digits(rest, 2);
    if (!mo || !take(rest, '-')) return {std::nullopt, bad};
    const auto d = digits(rest, 2);
    if (!d) return {std::nullopt, bad};
    const std::chrono::year_month_day date{std::chrono::year{*y},
                                           std::chrono::month{static_cast<unsigned>(*mo)},
                                           std::chrono::day{static_cast<unsigned>(*d)}};
    if (!date.ok()) return {std::nullopt, quoted(whole) + ": no such date"};
    if (*y > kLastYear)
        return {std::nullopt, quoted(whole) + ": schedules start no later than the year " + std::to_string(kLastYear)};

    seconds time_of_day{0};
    if (take(rest, 'T') || take(rest, ' ')) {
        const auto h = digits(rest, 2);
        if (!h || !take(rest, ':')) return {std::nullopt, bad};
        const auto m = digits(rest, 2);
        if (!m) return {std::nullopt, bad};
        int s = 0;
        if (take(rest, ':')) {
            const auto sec = digits(rest, 2);
            if (!sec) return {std::nullopt, bad};
            s = *sec;
        }
        if (*h > 23 || *m > 59 || s > 59) return {std::nullopt, quoted(whole) + ": no such time of day"};
        time_of_day = hours{*h} + minutes{*m} + seconds{s};
    }

    const LocalTime reading = local_days{date} + time_of_day;
    if (rest.empty()) return {from_local(reading), {}};
    if (rest == "Z" || rest == "z") return {Instant{reading.time_since_epoch()}, {}};
    const bool east = take(rest, '+');
    if (!east && !take(rest, '-')) return {std::nullopt, bad};
    const auto oh = digits(rest, 2);
    take(rest, ':');
    const auto om = digits(rest, 2);
    if (!oh || !om || !rest.empty() || *oh > 23 || *om > 59) return {std::nullopt, bad};
    const seconds offset = hours{*oh} + minutes{*om};
    return {Instant{reading.time_since_epoch() - (east ? offset : -offset)}, {}};
}

std::optional<Interval> WindowSet::next(Instant from, Instant merge_until) const {
    if (windows_.empty()) return Interval{from, std::max(from, kForever)};
    if (from >= kForever) return std::nullopt;
    // Occurrences start on their local day, so those of day d begin at or after d's local
    // midnight and no earlier than those of day d-1 (from_local never decreases). An
    // occurrence that covers `from` started on its day or the day before (none lasts
    // longer than 24 hours of wall clock plus a DST hour).
    const local_days first = std::chrono::floor<Days>(to_local(from)) - Days{1};
    std::optional<Interval> merged;
    std::vector<Interval> today;
    for (local_days day = first; merged || day <= first + Days{17}; day += Days{1}) {
        if (merged && (from_local(day) > merged->end || merged->end >= merge_until)) break;
        today.clear();
        for (const Window& w : windows_)
            if (auto occurrence = w.occurrence_on(day)) today.push_back(*occurrence);
        std::sort(today.begin(), today.end(),
                  [](const Interval& a, const Interval& b) { return a.start < b.start; });
        for (Interval occurrence : today) {
            if (occurrence.end <= from) continue;
            occurrence.start = std::max(occurrence.start, from);
            if (!merged) {
                merged = occurrence;
            } else if (occurrence.start <= merged->end) {
                merged->end = std::max(merged->end, occurrence.end);
            } else {
                return merged;  // a gap: every later occurrence starts later still
            }
        }
    }
    return merged;
}

}  // namespace guestfrag
