// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/schedule_output.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/columns.hpp"
#include "core/schedule/local_time.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

using Json = nlohmann::ordered_json;
using std::chrono::seconds;

/// "Mon 2026-11-23 22:00:00 CET"
std::string local_text(Instant t) {
    const LocalTime local = to_local(t);
    const auto day = std::chrono::floor<std::chrono::days>(local);
    const std::chrono::year_month_day date{day};
    const std::chrono::hh_mm_ss<seconds> time{local - day};
    static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    char text[64];
    std::snprintf(text, sizeof text, "%s %04d-%02u-%02u %02lld:%02lld:%02lld",
                  kDays[std::chrono::weekday{day}.c_encoding()], static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                  static_cast<long long>(time.hours().count()),
                  static_cast<long long>(time.minutes().count()),
                  static_cast<long long>(time.seconds().count()));
    return std::string(text) + " " + zone_abbreviation(t);
}

/// "20261123T210000Z"
std::string utc_basic(Instant t) {
    const auto day = std::chrono::floor<std::chrono::days>(t);
    const std::chrono::year_month_day date{day};
    const std::chrono::hh_mm_ss<seconds> time{t - day};
    char text[64];
    std::snprintf(text, sizeof text, "%04d%02u%02uT%02lld%02lld%02lldZ", static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                  static_cast<long long>(time.hours().count()),
                  static_cast<long long>(time.minutes().count()),
                  static_cast<long long>(time.seconds().count()));
    return text;
}

std::uint64_t batch_length(const Batch& b) { return static_cast<std::uint64_t>((b.end - b.start).count()); }

std::string rate_text(std::uint64_t bytes, std::uint64_t secs) {
    return secs == 0 ? "-" : format_size(bytes / secs) + "/s";
}

std::string moves_text(const Batch& b) {
    return b.first_move == b.last_move ? std::to_string(b.first_move)
                                       : std::to_string(b.first_move) + "-" + std::to_string(b.last_move);
}

std::string limits_text(const ScheduleOptions& o) {
    std::string text;
    if (o.rate) text += format_size(o.rate) + "/s";
    if (o.iops) text += (text.empty() ? "" : ", ") + std::to_string(o.iops) + " IOPS";
    if (o.max_per_window) text += ", at most " + format_size(o.max_per_window) + " per window";
    return text;
}

std::string windows_text(const ScheduleOptions& o) {
    if (o.windows.empty()) return "always open";
    std::string text;
    for (const Window& w : o.windows) text += (text.empty() ? "" : "; ") + w.text;
    return text + " (local time)";
}

Json nullable_instant(Instant t) { return t >= kForever ? Json(nullptr) : Json(iso_local(t)); }

Json nullable_number(std::uint64_t n) { return n == 0 ? Json(nullptr) : Json(n); }

}  // namespace

void print_schedule(std::ostream& out, const Schedule& schedule, const ScheduleSource& source) {
    const ScheduleOptions& o = source.options;
    out << "Schedule for " << source.plan_path << ": " << schedule.moves << " moves, "
        << format_size(schedule.bytes) << " in " << schedule.batches.size()
        << (schedule.batches.size() == 1 ? " batch\n" : " batches\n");
    out << "  limits   " << limits_text(o) << " (IOs of at most " << format_size(o.io_size) << ")\n";
    out << "  windows  " << windows_text(o) << '\n';
    out << "  from     " << local_text(o.start) << '\n';
    if (schedule.batches.empty()) return;

    struct Row {
        std::string batch, start, end, duration, moves, bytes, rate;
    };
    std::vector<Row> rows;
    rows.push_back({"batch", "start", "end", "duration", "moves", "bytes", "rate"});
    for (std::size_t k = 0; k < schedule.batches.size(); ++k) {
        const Batch& b = schedule.batches[k];
        rows.push_back({std::to_string(k + 1), local_text(b.start), local_text(b.end),
                        duration_text(batch_length(b)), moves_text(b), format_size(b.bytes),
                        rate_text(b.bytes, batch_length(b))});
    }
    std::array<std::size_t, 7> width{};
    for (const Row& r : rows) {
        const std::array<const std::string*, 7> cells{&r.batch, &r.start, &r.end, &r.duration,
                                                      &r.moves, &r.bytes, &r.rate};
        for (std::size_t c = 0; c < cells.size(); ++c) width[c] = std::max(width[c], cells[c]->size());
    }
    out << '\n';
    for (const Row& r : rows) {
        out << "  " << pad(r.batch, width[0], true) << "  " << pad(r.start, width[1]) << "  "
            << pad(r.end, width[2]) << "  " << pad(r.duration, width[3], true) << "  "
            << pad(r.moves, width[4], true) << "  " << pad(r.bytes, width[5], true) << "  "
            << pad(r.rate, width[6], true) << '\n';
    }
    const Batch& last = schedule.batches.back();
    out << "\nFinishes " << local_text(last.end) << ", "
        << duration_text(static_cast<std::uint64_t>((last.end - schedule.batches.front().start).count()))
        << " after the first batch starts\n"
        // One statement per fact: these times are the limits', and impact's are the device's.
        << "  at the limits above; a device slower than them takes longer (impact --plan times\n"
           "  the plan's own IO on each device model)\n";
}

std::string schedule_to_json(const Schedule& schedule, const ScheduleSource& source) {
    const ScheduleOptions& o = source.options;
    Json doc;
    doc["schema"] = "guestfrag.schedule.v1";
    doc["plan"] = source.plan_path;
    doc["start"] = iso_local(o.start);
    doc["rate"] = nullable_number(o.rate);
    doc["iops"] = nullable_number(o.iops);
    doc["max_per_window"] = nullable_number(o.max_per_window);
    doc["io_size"] = o.io_size;
    Json windows = Json::array();
    for (const Window& w : o.windows) windows.push_back(w.text);
    doc["windows"] = windows;
    doc["moves"] = schedule.moves;
    doc["total_bytes"] = schedule.bytes;
    doc["total_ios"] = schedule.ios;
    doc["finish"] = schedule.batches.empty() ? Json(nullptr) : Json(iso_local(schedule.batches.back().end));
    Json batches = Json::array();
    for (const Batch& b : schedule.batches) {
        Json j;
        j["start"] = iso_local(b.start);
        j["end"] = iso_local(b.end);
        j["bytes"] = b.bytes;
        j["first_move"] = b.first_move;
        j["last_move"] = b.last_move;
        j["moves"] = b.moves();
        j["ios"] = b.ios;
        j["seconds"] = batch_length(b);
        j["window_end"] = nullable_instant(b.window.end);
        batches.push_back(j);
    }
    doc["batches"] = batches;
    return doc.dump(2) + "\n";
}

std::string escape_ics_text(const std::string& text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '\\':
                out += "\\\\";
                break;
            case ';':
                out += "\\;";
                break;
            case ',':
                out += "\\,";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string fold_ics_line(const std::string& text) {
    // RFC 5545 §3.1: lines SHOULD NOT be longer than 75 octets excluding the line break; a
    // long line is split by CRLF followed by one space, which belongs to the next line.
    constexpr std::size_t kLimit = 75;
    std::string out;
    std::size_t line = 0;  // octets on the current output line
    for (std::size_t i = 0; i < text.size();) {
        // The whole UTF-8 sequence starting at i goes on one line.
        std::size_t len = 1;
        while (i + len < text.size() && (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80) ++len;
        if (line + len > kLimit) {
            out += "\r\n ";
            line = 1;
        }
        out.append(text, i, len);
        line += len;
        i += len;
    }
    return out + "\r\n";
}

std::string schedule_to_ics(const Schedule& schedule, const ScheduleSource& source, Instant stamp) {
    char digest[17];
    std::snprintf(digest, sizeof digest, "%016llx",
                  static_cast<unsigned long long>(source.allocation_digest));
    std::string out;
    const auto line = [&out](const std::string& text) { out += fold_ics_line(text); };
    line("BEGIN:VCALENDAR");
    line("VERSION:2.0");
    line("PRODID:-//guestfrag//guestfrag schedule//EN");
    line("CALSCALE:GREGORIAN");
    line("METHOD:PUBLISH");
    const std::size_t count = schedule.batches.size();
    for (std::size_t k = 0; k < count; ++k) {
        const Batch& b = schedule.batches[k];
        const std::string number = std::to_string(k + 1) + "/" + std::to_string(count);
        line("BEGIN:VEVENT");
        line("UID:guestfrag-" + std::string(digest) + "-" + utc_basic(b.start) + "-" +
             std::to_string(b.first_move) + "-" + std::to_string(b.last_move) + "@guestfrag");
        line("DTSTAMP:" + utc_basic(stamp));
        line("DTSTART:" + utc_basic(b.start));
        line("DTEND:" + utc_basic(b.end));
        line("SUMMARY:" + escape_ics_text("guestfrag batch " + number + ": moves " + moves_text(b) + ", " +
                                          format_size(b.bytes)));
        line("DESCRIPTION:" +
             escape_ics_text("Plan " + source.plan_path + ", batch " + number + ": moves " +
                             std::to_string(b.first_move) + " to " + std::to_string(b.last_move) + " of " +
                             std::to_string(schedule.moves) + " (0-based), " + std::to_string(b.bytes) +
                             " bytes in " + std::to_string(b.ios) + " IOs; limits " +
                             limits_text(source.options) + "."));
        line("TRANSP:OPAQUE");
        line("END:VEVENT");
    }
    line("END:VCALENDAR");
    return out;
}

}  // namespace guestfrag::cli
