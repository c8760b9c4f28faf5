// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/plan_text.hpp"

#include <iomanip>
#include <map>
#include <sstream>

#include "app/cli/columns.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {
namespace {

std::string percent(const std::optional<double>& value) {
    if (!value) return "-";
    std::ostringstream out;
    out << std::fixed << std::setprecision(1) << *value << " %";
    return out.str();
}

/// `text` with each number written N: the key reasons are grouped by.
std::string without_numbers(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool digit = text[i] >= '0' && text[i] <= '9';
        if (!digit) {
            out += text[i];
        } else if (i == 0 || text[i - 1] < '0' || text[i - 1] > '9') {
            out += 'N';
        }
    }
    return out;
}

constexpr int kNameWidth = 36;

/// "  name            value" for figures without a before and after.
void line(std::ostream& out, const std::string& name, const std::string& value) {
    out << "  " << std::left << std::setw(kNameWidth) << name << std::right << std::setw(14) << value << '\n';
}

void row(std::ostream& out, const std::string& name, const std::string& before, const std::string& after) {
    out << "  " << std::left << std::setw(kNameWidth) << name << std::right << std::setw(14) << before << "  ->  "
        << std::left << after << '\n';
}

}  // namespace

void print_plan_summary(std::ostream& out, const Plan& plan, const VolumeMap& volume, const std::string& image) {
    const PlanSummary& s = plan.summary;
    out << "Plan for " << image << ", partition " << volume.partition << " (strategy " << plan.strategy
        << (plan.order.empty() ? "" : ", order " + plan.order) << ")\n";
    line(out, "moves", std::to_string(s.moves));
    line(out, "data moved", format_size(s.moved_bytes));
    row(out, "fragments", std::to_string(s.fragments_before), std::to_string(s.fragments_after));
    row(out, "fragmented streams", std::to_string(s.fragmented_streams_before),
        std::to_string(s.fragmented_streams_after));
    row(out, "free extents", std::to_string(s.free_extents_before), std::to_string(s.free_extents_after));
    row(out, "largest free extent", format_size(s.largest_free_extent_clusters_before * volume.cluster_size),
        format_size(s.largest_free_extent_clusters_after * volume.cluster_size));
    row(out, "free-space fragmentation", percent(s.free_space_fragmentation_percent_before),
        percent(s.free_space_fragmentation_percent_after));
    row(out, "reclaimable (" + format_size(s.granule_size) + " granules)", format_size(s.reclaimable_bytes_before),
        format_size(s.reclaimable_bytes_after));
    line(out, "thin growth", format_size(s.thin_growth_bytes));
    line(out, "clone delta growth", format_size(s.clone_delta_growth_bytes));
    if (!plan.skipped.empty()) {
        // Reasons repeat with different numbers ("no free region of 12 clusters ..."): group them
        // by the reason with its numbers left out, and show the group's first with its own.
        struct Group {
            std::size_t count = 0;
            std::string first;
        };
        std::map<std::string, Group> groups;
        for (const Plan::Skipped& k : plan.skipped) {
            Group& g = groups[without_numbers(k.reason)];
            if (g.count++ == 0) g.first = k.reason;
        }
        out << "  skipped " << plan.skipped.size() << " streams:\n";
        for (const auto& [key, g] : groups)
            out << "    " << (g.count == 1 ? "" : std::to_string(g.count) + " streams, such as: ") << g.first
                << '\n';
    }
    for (const std::string& note : plan.notes) out << hanging("  note: ", note);
}

std::string knee_text(const Frontier& frontier) {
    if (!frontier.knee) {
        // No knee of a plan that improves free space: its gain only keeps pace with its data.
        if (frontier.points.empty() || !frontier_shares(frontier.points, frontier.points.size() - 1))
            return "";
        return "none: no budget short of the whole plan gives more than its share of the improvement";
    }
    const auto shares = frontier_shares(frontier.points, *frontier.knee);
    const FrontierPoint& knee = frontier.points[*frontier.knee];
    std::ostringstream text;
    text << std::fixed << std::setprecision(0) << "moving " << format_size(knee.moved_bytes) << " ("
         << shares->data * 100 << " % of the plan's data, its first " << knee.moves << " moves) gives "
         << shares->gain * 100 << " % of the free-space improvement the plan reaches";
    return text.str();
}

void print_frontier(std::ostream& out, const Frontier& frontier, const VolumeMap& volume) {
    out << "\nTrade-off: the plan's first moves up to each budget\n"
        << "  " << std::setw(12) << "budget" << std::setw(12) << "moved" << std::setw(10) << "moves"
        << std::setw(12) << "free frag." << std::setw(14) << "free extents" << std::setw(14) << "largest free"
        << std::setw(12) << "fragmented" << '\n';
    for (std::size_t k = 0; k < frontier.points.size(); ++k) {
        const FrontierPoint& p = frontier.points[k];
        out << (frontier.knee == k ? "* " : "  ") << std::setw(12) << format_size(p.budget_bytes) << std::setw(12)
            << format_size(p.moved_bytes) << std::setw(10) << p.moves << std::setw(12)
            << percent(p.free_space_fragmentation_percent) << std::setw(14) << p.free_extents << std::setw(14)
            << format_size(p.largest_free_extent_clusters * volume.cluster_size) << std::setw(12)
            << p.fragmented_streams << '\n';
    }
    if (const std::string knee = knee_text(frontier); !knee.empty()) out << hanging("  knee (*): ", knee);
}

}  // namespace guestfrag::cli
