// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/verdict_text.hpp"

#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/columns.hpp"
#include "app/cli/failure.hpp"
#include "core/plan/planner.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

using Json = nlohmann::ordered_json;

std::string plan_name(const WeighedPlan& p) {
    return std::string(strategy_name(p.options.strategy)) +
           (p.planned.plan.order.empty() ? "" : " --order " + p.planned.plan.order);
}

/// Seconds saved as a change of time: "-1.20 s", or "+0.15 s (slower)".
std::string change(double saved) {
    return saved < 0 ? "+" + seconds_text(-saved) + " (slower)" : "-" + seconds_text(saved);
}

std::string percent(double part, double whole) {
    return whole > 0 ? fixed(100 * part / whole, 0) + " %" : "-";
}

/// Where the text of a verdict line starts, under "  costs    ".
constexpr std::string_view kIndent = "           ";

Json device_json(const DeviceSeconds& s) { return {{"hdd", s.hdd}, {"ssd", s.ssd}, {"array", s.array}}; }

}  // namespace

void print_verdict(std::ostream& out, const ImageAnalysis& analysis, std::size_t volume,
                   const VolumeVerdict& weighed, const std::string& image) {
    if (!weighed.verdict) {
        out << "Partition " << weighed.partition << ": " << weighed.reason() << '\n';
        return;
    }
    const Verdict& v = *weighed.verdict;
    const VolumeAnalysis& va = analysis.volumes.at(volume);
    const std::string device(device_name(v.device));
    if (!v.fallback.empty()) std::cerr << "guestfrag: warning: " << v.fallback << '\n';
    out << "Partition " << v.partition << ": ";
    if (!v.chosen) {
        out << "no action\n  why      " << v.reason << '\n';
    } else {
        const WeighedPlan& p = v.plans[*v.chosen];
        const double saved = on_device(p.saved, v.device);
        out << "defragment with " << plan_name(p) << (v.blockers.empty() ? "" : " (blocked now)") << '\n';
        out << "  buys     " << v.workload.text() << " on the " << device << " model "
            << seconds_text(v.now_seconds) << " -> " << seconds_text(v.now_seconds - saved) << " (-"
            << percent(saved, v.now_seconds) << "); hdd " << change(p.saved.hdd) << ", ssd "
            << change(p.saved.ssd) << '\n';
        const PlanSummary& s = p.planned.plan.summary;
        out << "  costs    moves " << format_size(s.moved_bytes) << "; grows the disk by "
            << format_size(p.growth_bytes) << '\n';
        if (p.freed_bytes > 0)
            out << kIndent << format_size(p.net_growth_bytes()) << " net once the "
                << format_size(p.freed_bytes) << " it frees is reclaimed (compact or TRIM in the guest)\n";
        // The storage work the rule weighs and its parts, wrapped at the report's 100 columns.
        const auto secs = [&](const DeviceSeconds& d) { return seconds_text(on_device(d, v.device)); };
        std::vector<std::string> parts{
            "work once " + secs(p.storage_work()) + " on the " + device + ": own IO " + secs(p.plan_io),
            "next backup +" + secs(p.backup_reads), "next copy +" + secs(p.copy_added)};
        if (p.impact.dedup_rescan_reads) parts.push_back("dedup re-scan +" + secs(p.dedup_rescan));
        std::string line = std::string(kIndent) + parts.front();
        for (std::size_t i = 1; i < parts.size(); ++i) {
            if (line.size() + 2 + parts[i].size() > 100) {
                out << line << ",\n";
                line = std::string(kIndent) + parts[i];
            } else {
                line += ", " + parts[i];
            }
        }
        out << line << '\n';
        out << "  leaves   fragmented streams " << s.fragmented_streams_before << " -> "
            << s.fragmented_streams_after << ", free extents " << s.free_extents_before << " -> "
            << s.free_extents_after << '\n';
    }
    if (v.blockers.empty()) {
        out << "  offline  can run now: the volume is clean and no other process writes the image\n";
    } else {
        for (const std::string& b : v.blockers) out << "  blocked  " << b << '\n';
    }
    if (v.reclaimable_bytes > 0)
        out << "  reclaim  " << format_size(v.reclaimable_bytes)
            << " of NTFS-free space is allocated in the image: compact or TRIM gives it back\n";

    out << "\n  Plans weighed: " << v.workload.text() << " (" << v.guest.name << " guest) on the " << device
        << " model, now " << seconds_text(v.now_seconds) << "\n";
    out << "    " << pad("plan", 28) << pad("moved", 11, true) << pad("saves", 10, true)
        << pad("work", 10, true) << "  verdict\n";
    for (std::size_t i = 0; i < v.plans.size(); ++i) {
        const WeighedPlan& p = v.plans[i];
        const std::string verdict =
            v.chosen == i         ? "chosen"
            : !p.rejected.empty() ? p.rejected
            : on_device(p.saved, v.device) < 0.9 * on_device(v.plans[*v.chosen].saved, v.device)
                ? "passes; saves less than the chosen"
                : "passes; the chosen grows or moves less";
        out << (v.chosen == i ? "  * " : "    ") << pad(plan_name(p), 28)
            << pad(format_size(p.planned.plan.summary.moved_bytes), 11, true)
            << pad(seconds_text(on_device(p.saved, v.device)), 10, true)
            << pad(seconds_text(on_device(p.storage_work(), v.device)), 10, true) << "  " << verdict << '\n';
    }

    const VolumeMap& map = va.map;
    out << "\n  Volume   " << format_size(static_cast<std::uint64_t>(map.total_clusters) * map.cluster_size)
        << ", " << format_size(map.cluster_size) << " clusters, " << va.files.files << " files; "
        << va.files.fragmented_streams << " of " << va.files.streams << " streams fragmented\n";
    out << "  Free     " << va.free_space.extents << " extents, largest "
        << format_size(va.free_space.largest_extent_clusters * map.cluster_size) << ", fragmentation "
        << fixed(va.free_space.fragmentation_percent, 1) << " %\n";
    if (v.chosen) {
        // The commands to run it, with the image's path where it fits 100 columns.
        const WeighedPlan& p = v.plans[*v.chosen];
        const std::string tail =
            (analysis.volumes.size() > 1 ? " --partition " + std::to_string(v.partition) : "") +
            " --strategy " + std::string(strategy_name(p.options.strategy)) +
            (p.planned.plan.order.empty() ? "" : " --order " + p.planned.plan.order) + " -o plan.json";
        const std::size_t widest = std::max(26 + tail.size(), std::size_t{51}) + image.size();
        const std::string name = widest <= 100 ? image : "IMAGE";
        out << "\n  Run      guestfrag plan " << name << tail << "\n           guestfrag apply " << name
            << " --plan plan.json -o OUT\n";
    }
}

Json verdict_to_json(const VolumeVerdict& weighed) {
    if (!weighed.verdict) return {{"action", "unavailable"}, {"reason", weighed.reason()}};
    const Verdict& v = *weighed.verdict;
    Json plans = Json::array();
    for (const WeighedPlan& p : v.plans)
        plans.push_back({{"strategy", std::string(strategy_name(p.options.strategy))},
                         {"order", p.planned.plan.order.empty() ? Json(nullptr) : Json(p.planned.plan.order)},
                         {"moves", p.planned.plan.moves.size()},
                         {"moved_bytes", p.planned.plan.summary.moved_bytes},
                         {"seconds_saved", device_json(p.saved)},
                         {"plan_io_seconds", device_json(p.plan_io)},
                         {"backup_reads_seconds", device_json(p.backup_reads)},
                         {"copy_added_seconds", device_json(p.copy_added)},
                         {"dedup_rescan_seconds",
                          p.impact.dedup_rescan_reads ? device_json(p.dedup_rescan) : Json(nullptr)},
                         {"storage_work_seconds", device_json(p.storage_work())},
                         {"growth_bytes", p.growth_bytes},
                         {"freed_bytes", p.freed_bytes},
                         {"net_growth_bytes", p.net_growth_bytes()},
                         {"rejected", p.rejected.empty() ? Json(nullptr) : Json(p.rejected)}});
    Json out = {{"action", v.chosen ? "plan" : "none"},
                {"reason", v.reason},
                {"fallback", v.fallback.empty() ? Json(nullptr) : Json(v.fallback)},
                {"device", std::string(device_name(v.device))},
                {"workload", v.workload.text()},
                {"guest", std::string(v.guest.name)},
                {"now_seconds", v.now_seconds},
                {"disk_bytes", v.disk_bytes},
                {"reclaimable_bytes", v.reclaimable_bytes},
                {"chosen", v.chosen ? Json(*v.chosen) : Json(nullptr)},
                {"can_run_offline", v.blockers.empty()},
                {"blockers", v.blockers},
                {"plans", std::move(plans)}};
    return out;
}

int check_status(const Verdict& v) noexcept {
    if (!v.chosen) return kOk;
    return v.blockers.empty() ? kPlanWorthRunning : kPlanBlocked;
}

}  // namespace guestfrag::cli
