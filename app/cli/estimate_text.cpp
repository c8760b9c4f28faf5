// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/estimate_text.hpp"

#include <algorithm>
#include <cstdio>

#include "app/cli/columns.hpp"
#include "app/cli/provisioning_options.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {
namespace {

std::string format_seconds(double seconds) {
    if (seconds < 1) return fixed(seconds * 1e3, 1) + " ms";
    if (seconds < 600) return fixed(seconds, 2) + " s";
    return fixed(seconds / 60, 1) + " min";
}

/// "−12.3%" / "+4.0%": how `after` compares with `before`; "" when before is 0.
std::string change(double before, double after) {
    if (before == 0) return "";
    const double pct = 100.0 * (after - before) / before;
    return (pct >= 0 ? "+" : "") + fixed(pct, 1) + "%";
}

void table_row(std::ostream& out, const std::string& label, const std::string& before,
               const std::optional<std::string>& after = {}, const std::string& delta = {}) {
    out << "  " << pad(label, 24) << pad(before, 14, true);
    if (after) out << pad(*after, 14, true) << pad(delta, 10, true);
    out << '\n';
}

/// "1.25x": `second` as a multiple of `first`; "-" when first is 0.
std::string ratio(double first, double second) { return first > 0 ? fixed(second / first, 2) + "x" : "-"; }

/// The rows of one IoStats `x`, or of `x` and `y` side by side with how y compares with x
/// (`compare`: change() or ratio()). A share compares by percentage points, not by a
/// percentage of itself.
void print_stats_rows(std::ostream& out, const IoStats& x, const IoStats* y,
                      std::string (*compare)(double, double)) {
    const auto row = [&](const std::string& label, auto value, auto text) {
        if (y)
            table_row(out, label, text(x), text(*y), compare(value(x), value(*y)));
        else
            table_row(out, label, text(x));
    };
    const auto count = [&](const std::string& label, std::uint64_t IoStats::*n, auto format) {
        row(
            label, [n](const IoStats& s) { return static_cast<double>(s.*n); },
            [n, format](const IoStats& s) { return format(s.*n); });
    };
    count("IOs", &IoStats::ios, [](std::uint64_t n) { return std::to_string(n); });
    count("Data", &IoStats::bytes, [](std::uint64_t n) { return format_size(n); });
    row(
        "Mean IO size", [](const IoStats& s) { return s.mean_io_bytes; },
        [](const IoStats& s) { return format_size(static_cast<std::uint64_t>(s.mean_io_bytes)); });
    // Not structured bindings below: clang before 16 cannot capture one in a lambda.
    for (const auto& entry : {std::pair{"Sequential (+1)", &IoStats::sequential_percent},
                              std::pair{"Near-sequential (+1..+8)", &IoStats::near_sequential_percent}}) {
        const auto percent = entry.second;
        const auto text = [percent](const IoStats& s) { return fixed(s.*percent, 1) + "%"; };
        if (y)
            table_row(
                out, entry.first, text(x), text(*y),
                ((*y).*percent >= x.*percent ? "+" : "") + fixed((*y).*percent - x.*percent, 1) + " pt");
        else
            table_row(out, entry.first, text(x));
    }
    for (const auto& entry :
         {std::pair{"HDD time (7200 rpm)", &DeviceSeconds::hdd}, std::pair{"SSD time", &DeviceSeconds::ssd},
          std::pair{"Array time", &DeviceSeconds::array}}) {
        const auto member = entry.second;
        row(
            entry.first, [member](const IoStats& s) { return s.device_seconds.*member; },
            [member](const IoStats& s) { return format_seconds(s.device_seconds.*member); });
    }
}

void print_totals(std::ostream& out, const VolumeEstimate& v) {
    const IoStats* after = v.after ? &v.after->stats : nullptr;
    if (after) table_row(out, "", "before", "after", "change");
    print_stats_rows(out, v.before.stats, after, change);
}

}  // namespace

void print_provisioned(std::ostream& out, const std::string& title, const IoStats& s) {
    out << "\n  " << title << '\n';
    out << "  " << pad("", 24);
    for (const ProvisionedSeconds& p : s.provisioned) out << pad(std::string(provisioning_name(p.type)), 14, true);
    out << '\n';
    auto line = [&](const std::string& label, auto cell) {
        out << "  " << pad(label, 24);
        for (const ProvisionedSeconds& p : s.provisioned) out << pad(cell(p), 14, true);
        out << '\n';
    };
    line("IOs", [&](const ProvisionedSeconds&) { return std::to_string(s.ios); });
    line("First writes", [&](const ProvisionedSeconds& p) { return std::to_string(p.first_writes); });
    const std::pair<const char*, double DeviceSeconds::*> models[] = {
        {"HDD", &DeviceSeconds::hdd}, {"SSD", &DeviceSeconds::ssd}, {"Array", &DeviceSeconds::array}};
    for (const auto& entry : models) {
        // Not a structured binding: clang before 16 cannot capture one in a lambda.
        const std::string model = entry.first;
        const auto member = entry.second;
        line(model + " time", [&](const ProvisionedSeconds& p) { return format_seconds(p.device_seconds.*member); });
        line(model + " IOPS", [&](const ProvisionedSeconds& p) {
            return fixed(throughput(s.ios, s.bytes, p.device_seconds.*member).iops, 0);
        });
        line(model + " MB/s", [&](const ProvisionedSeconds& p) {
            return fixed(throughput(s.ios, s.bytes, p.device_seconds.*member).mb_per_second, 1);
        });
        line(model + " mean latency", [&](const ProvisionedSeconds& p) {
            const double latency = throughput(s.ios, s.bytes, p.device_seconds.*member).mean_latency_seconds;
            // Queue-depth-1 latencies are mostly below a millisecond: those in µs.
            return latency < 1e-3 ? fixed(latency * 1e6, 1) + " us" : format_seconds(latency);
        });
    }
}

namespace {

/// `count` as a bar of up to `width` marks relative to `largest`; padded to `width` when
/// another column follows.
std::string bar(std::uint64_t count, std::uint64_t largest, std::size_t width, bool padded) {
    std::size_t marks = 0;
    if (count != 0 && largest != 0)
        // At least one mark for a non-empty bucket, so rare buckets stay visible.
        marks = std::max<std::size_t>(
            1, static_cast<std::size_t>(static_cast<double>(count) / static_cast<double>(largest) *
                                        static_cast<double>(width)));
    return std::string(marks, '#') + (padded ? std::string(width - marks, ' ') : "");
}

/// One histogram as text bars; before and after side by side, scaled alike.
void print_histogram(std::ostream& out, const std::string& title, const Histogram& before,
                     const Histogram* after, const std::string& columns = "before | after") {
    constexpr std::size_t kBar = 24;
    std::uint64_t largest = 0;
    for (const std::uint64_t c : before.counts()) largest = std::max(largest, c);
    if (after)
        for (const std::uint64_t c : after->counts()) largest = std::max(largest, c);
    out << "\n  " << title << (after ? " (" + columns + ")" : "") << '\n';
    const auto& limits = before.limits();
    for (std::size_t i = 0; i < before.counts().size(); ++i) {
        const std::string label =
            i < limits.size() ? "<= " + std::to_string(limits[i]) : "> " + std::to_string(limits.back());
        std::string line = "  " + pad(label, 12) + pad(std::to_string(before.counts()[i]), 9, true) + ' ' +
                           bar(before.counts()[i], largest, kBar, after != nullptr);
        if (after)
            line += " |" + pad(std::to_string(after->counts()[i]), 9, true) + ' ' +
                    bar(after->counts()[i], largest, kBar, false);
        while (line.back() == ' ') line.pop_back();
        out << line << '\n';
    }
}

/// estimate --compare: the real trace beside the estimate of the volume as it is.
void print_traced(std::ostream& out, const IoStats& t, const IoStats& e) {
    out << "\n  Traced vs estimated (the volume as it is; estimate / traced)\n";
    table_row(out, "", "traced", "estimated", "ratio");
    print_stats_rows(out, t, &e, ratio);
    print_histogram(out, "IO length (bytes)", t.io_length, &e.io_length, "traced | estimated");
    print_histogram(out, "Seek distance (sectors; +1 = sequential)", t.seek_distance, &e.seek_distance,
                    "traced | estimated");
}

/// The Guest line's second line: each file's own read-ahead window, where it is not the
/// one the Guest line names ("" then).
std::string guest_window_line(const GuestProfile& guest) {
    const bool fuse = guest.cache == GuestProfile::Cache::Disk && guest.layer_read_ahead_bytes != 0;
    if (!fuse && guest.file_read_ahead_bytes() == guest.read_ahead_bytes) return "";
    return std::string(26, ' ') + format_size(guest.file_read_ahead_bytes()) + " a file" +
           (fuse ? " in FUSE's cache" : "") +
           (guest.reader.sequential_advice ? ": its reader advises sequential access" : "") + '\n';
}

}  // namespace

void print_estimate(std::ostream& out, const std::string& image, const PreparedWorkload& w,
                    const std::optional<std::string>& plan_path, const std::vector<VolumeEstimate>& volumes) {
    out << "IO estimate for " << image << '\n';
    out << "  " << pad("Workload", 24) << w.workload.text() << ", IOs of at most " << format_size(w.max_io)
        << '\n';
    // The guest shapes file reads only; writes, fio jobs and block IO traces go as they are.
    if (w.workload.kind == Workload::Kind::Scan || w.workload.kind == Workload::Kind::Trace)
        out << "  " << pad("Guest", 24) << w.guest.name << ", read-ahead "
            << format_size(w.guest.read_ahead_bytes)
            << (w.guest.reader.name.empty() ? "" : ", files read by " + std::string(w.guest.reader.name))
            << (w.io_trace ? " (a block IO trace is replayed as traced)" : "") << '\n'
            << guest_window_line(w.guest);
    if (plan_path) out << "  " << pad("Plan", 24) << *plan_path << '\n';
    for (const VolumeEstimate& v : volumes) {
        if (v.no_volume)
            out << "\nThe whole disk (no NTFS volume read)\n";
        else
            out << "\nVolume on partition " << v.partition << '\n';
        print_totals(out, v);
        out << hanging("  " + pad("Provisioning", 24), provisioning_text(v.provisioning));
        out << "  " << pad("Writes", 24) << v.before.stats.writes << " IOs, " << format_size(v.before.stats.written_bytes)
            << '\n';
        if (const auto& t = v.before.trace) {
            out << "  " << pad("Trace", 24) << t->paths << " paths: " << t->read << " read, "
                << t->without_data << " without data, " << t->missing << " missing\n";
            constexpr std::size_t kShown = 10;
            for (std::size_t i = 0; i < t->missing_paths.size() && i < kShown; ++i)
                out << "  " << pad("", 24) << "missing: " << t->missing_paths[i] << '\n';
            if (t->missing_paths.size() > kShown)
                out << "  " << pad("", 24) << "... and " << t->missing_paths.size() - kShown << " more\n";
        }
        for (const auto* e : {&v.before, v.after ? &*v.after : nullptr}) {
            if (e == nullptr || !e->write) continue;
            const WriteOutcome& wr = *e->write;
            out << "  " << pad(e == &v.before ? "New files (before)" : "New files (after)", 24)
                << wr.files_written << " of " << wr.files << " written, " << format_size(wr.bytes_written)
                << ", " << wr.fragmented_files << " fragmented (" << wr.fragments << " fragments)\n";
        }
        print_provisioned(out, v.after ? "Eager, lazy and thin (before)" : "Eager, lazy and thin", v.before.stats);
        if (v.after) print_provisioned(out, "Eager, lazy and thin (after)", v.after->stats);
        const IoStats* after = v.after ? &v.after->stats : nullptr;
        print_histogram(out, "IO length (bytes)", v.before.stats.io_length,
                        after ? &after->io_length : nullptr);
        print_histogram(out, "Seek distance (sectors; +1 = sequential)", v.before.stats.seek_distance,
                        after ? &after->seek_distance : nullptr);
        if (v.traced) print_traced(out, *v.traced, v.before.stats);
    }
}

}  // namespace guestfrag::cli
