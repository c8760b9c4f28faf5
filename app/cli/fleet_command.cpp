// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag fleet`: every image of a results database ranked by what is at stake, with its
// datastore's and host's totals and its trend over the runs (docs/batch.md, "Fleet").
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/batch/database.hpp"
#include "app/batch/fleet.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

using batch::FleetGroup;
using batch::FleetImage;
using batch::FleetRank;
using Json = nlohmann::ordered_json;

const std::map<std::string, FleetRank> kRanks{{"fragmentation", FleetRank::Fragmentation},
                                              {"reclaimable", FleetRank::Reclaimable},
                                              {"growth", FleetRank::Growth},
                                              {"copy", FleetRank::Copy},
                                              {"gain", FleetRank::Gain}};

template <typename T>
Json optional_json(const std::optional<T>& value) {
    return value ? Json(*value) : Json(nullptr);
}

Json group_json(const FleetGroup& g) {
    return {{"name", g.name},
            {"images", g.images},
            {"max_fragmentation_percent", g.max_fragmentation_percent},
            {"mean_fragmentation_percent", g.mean_fragmentation_percent},
            {"excess_fragments", g.excess_fragments},
            {"reclaimable_bytes", g.reclaimable_bytes},
            {"thin_growth_bytes", g.thin_growth_bytes},
            {"copy_commands_4m", g.copy_commands},
            {"copy_relaid_commands_4m", g.copy_relaid_commands}};
}

Json report_json(const batch::FleetReport& r, const std::string& rank) {
    Json images = Json::array();
    for (const FleetImage& i : r.images)
        images.push_back(
            {{"path", i.path},
             {"host", i.host},
             {"datastore", i.datastore},
             {"analyzed_at", i.analyzed_at},
             {"volumes", i.volumes},
             {"fragmentation_percent", i.fragmentation_percent},
             {"excess_fragments", i.excess_fragments},
             {"reclaimable_bytes", i.reclaimable_bytes},
             {"thin_growth_bytes", optional_json(i.thin_growth_bytes)},
             {"copy_commands_4m", optional_json(i.copy_commands)},
             {"copy_relaid_commands_4m", optional_json(i.copy_relaid_commands)},
             {"verdict",
              {{"weighed_volumes", i.weighed_volumes},
               {"recommended_volumes", i.recommended_volumes},
               {"seconds_saved", optional_json(i.seconds_saved)},
               {"plan_io_seconds", optional_json(i.plan_io_seconds)},
               {"storage_work_seconds", optional_json(i.work_seconds)}}},
             {"trend",
              {{"analyses", i.analyses},
               {"first_fragmentation_percent", i.first_fragmentation_percent},
               {"change_percent_points", i.fragmentation_percent - i.first_fragmentation_percent}}}});
    Json datastores = Json::array(), hosts = Json::array(), failed = Json::array();
    for (const FleetGroup& g : r.datastores) datastores.push_back(group_json(g));
    for (const FleetGroup& g : r.hosts) hosts.push_back(group_json(g));
    for (const batch::FleetFailure& f : r.failed) failed.push_back({{"path", f.path}, {"error", f.error}});
    return {{"schema", "guestfrag.fleet.v1"}, {"rank", rank},   {"images", images},
            {"datastores", datastores},       {"hosts", hosts}, {"failed", failed}};
}

/// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
std::string csv(const std::string& field) {
    if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
    std::string out = "\"";
    for (const char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + '"';
}

std::string optional_text(const std::optional<std::uint64_t>& value) {
    return value ? std::to_string(*value) : std::string();
}

void print_csv(const batch::FleetReport& r) {
    std::cout
        << "rank,path,host,datastore,analyzed_at,volumes,fragmentation_percent,excess_fragments,"
           "reclaimable_bytes,thin_growth_bytes,copy_commands_4m,copy_relaid_commands_4m,analyses,"
           "first_fragmentation_percent,weighed_volumes,recommended_volumes,seconds_saved,plan_io_seconds,"
           "storage_work_seconds\n";
    std::size_t rank = 0;
    for (const FleetImage& i : r.images)
        std::cout << ++rank << ',' << csv(i.path) << ',' << csv(i.host) << ',' << csv(i.datastore) << ','
                  << i.analyzed_at << ',' << i.volumes << ',' << fixed(i.fragmentation_percent, 4) << ','
                  << i.excess_fragments << ',' << i.reclaimable_bytes << ','
                  << optional_text(i.thin_growth_bytes) << ',' << optional_text(i.copy_commands) << ','
                  << optional_text(i.copy_relaid_commands) << ',' << i.analyses << ','
                  << fixed(i.first_fragmentation_percent, 4) << ',' << i.weighed_volumes << ','
                  << i.recommended_volumes << ',' << (i.seconds_saved ? fixed(*i.seconds_saved, 4) : "")
                  << ',' << (i.plan_io_seconds ? fixed(*i.plan_io_seconds, 4) : "") << ','
                  << (i.work_seconds ? fixed(*i.work_seconds, 4) : "") << '\n';
}

/// The verdict in a column: "2.37 s a run / 14.7 s" (saved / storage work), "no action", or
/// "-" when not weighed.
std::string verdict_text(const FleetImage& i) {
    if (i.weighed_volumes == 0) return "-";
    if (!i.recommended()) return "no action";
    return seconds_text(*i.seconds_saved) + " a run / " + seconds_text(*i.work_seconds);
}

std::string copy_text(const FleetImage& i) {
    if (!i.copy_commands) return "-";
    return std::to_string(*i.copy_commands) +
           (i.copy_relaid_commands ? " > " + std::to_string(*i.copy_relaid_commands) : "");
}

void print_groups(const char* title, const std::vector<FleetGroup>& groups) {
    std::cout << '\n'
              << pad(title, 32) << pad("images", 8, true) << pad("max %", 9, true) << pad("mean %", 9, true)
              << pad("excess", 10, true) << pad("reclaimable", 13, true) << pad("thin growth", 13, true)
              << pad("copy 4M now > re-laid", 24, true) << '\n';
    for (const FleetGroup& g : groups)
        std::cout << pad(g.name.empty() ? "(not recorded)" : g.name, 32)
                  << pad(std::to_string(g.images), 8, true)
                  << pad(fixed(g.max_fragmentation_percent, 2), 9, true)
                  << pad(fixed(g.mean_fragmentation_percent, 2), 9, true)
                  << pad(std::to_string(g.excess_fragments), 10, true)
                  << pad(format_size(g.reclaimable_bytes), 13, true)
                  << pad(format_size(g.thin_growth_bytes), 13, true)
                  << pad(std::to_string(g.copy_commands) + " > " + std::to_string(g.copy_relaid_commands), 24,
                         true)
                  << '\n';
}

void print_text(const batch::FleetReport& r, const std::string& rank, std::size_t top) {
    // Ranked by gain, the verdict's column takes the copy figures' place.
    const bool by_gain = rank == "gain";
    std::cout << r.images.size() << " images, ranked by " << rank;
    if (r.images.size() > top) std::cout << " (the first " << top << ")";
    std::cout << "\n\n"
              << pad("#", 4, true) << "  " << pad("image", 40) << pad("files %", 9, true)
              << pad("excess", 9, true) << pad("reclaimable", 13, true) << pad("thin growth", 13, true)
              << pad(by_gain ? "saves / work" : "copy 4M now > re-laid", 24, true) << pad("trend", 18, true)
              << '\n';
    std::size_t n = 0;
    for (const FleetImage& i : r.images) {
        if (n == top) break;
        const double change = i.fragmentation_percent - i.first_fragmentation_percent;
        std::cout << pad(std::to_string(++n), 4, true) << "  " << pad(i.path, 40)
                  << pad(fixed(i.fragmentation_percent, 2), 9, true)
                  << pad(std::to_string(i.excess_fragments), 9, true)
                  << pad(format_size(i.reclaimable_bytes), 13, true)
                  << pad(i.thin_growth_bytes ? format_size(*i.thin_growth_bytes) : "-", 13, true)
                  << pad(by_gain ? verdict_text(i) : copy_text(i), 24, true)
                  << pad((change >= 0 ? "+" : "") + fixed(change, 2) + " pp (" + std::to_string(i.analyses) +
                             (i.analyses == 1 ? " run)" : " runs)"),
                         18, true)
                  << '\n';
    }
    print_groups("datastore", r.datastores);
    print_groups("host", r.hosts);
    if (!r.failed.empty()) {
        std::cout << '\n' << r.failed.size() << " images whose newest analysis failed:\n";
        for (const batch::FleetFailure& f : r.failed) std::cout << "  " << f.path << ": " << f.error << '\n';
    }
}

}  // namespace

void add_fleet_command(CLI::App& app) {
    struct Options {
        std::string db = "guestfrag.sqlite";
        std::string rank = "fragmentation";
        std::size_t top = 20;
        bool json = false;
        bool csv = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "fleet", "Every image a batch recorded, ranked by what is at stake, by datastore and host");
    cmd->add_option("--db", opts->db, "Results database: an SQLite file or a postgresql:// URI")
        ->type_name("DB")
        ->capture_default_str();
    cmd->add_option("--rank", opts->rank,
                    "Rank images by fragmentation, reclaimable, growth, copy or gain (the verdict's seconds "
                    "saved a run per second of the storage work the plan causes; batch --verdict records it)")
        ->check(CLI::IsMember({"fragmentation", "reclaimable", "growth", "copy", "gain"}))
        ->capture_default_str();
    cmd->add_option("--top", opts->top, "Images the text report lists")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    auto* json = cmd->add_flag("--json", opts->json, "Print guestfrag.fleet.v1 JSON (every image)");
    cmd->add_flag("--csv", opts->csv, "Print the ranked images as CSV (every image)")->excludes(json);
    cmd->footer("Example:\n  guestfrag fleet --db guestfrag.sqlite --rank gain --top 20\n");
    cmd->callback([opts] {
        const std::string name = batch::database_name(opts->db);
        batch::FleetReport report;
        on_behalf_of(name, [&] {
            batch::ResultsDb db(opts->db, false);
            report = batch::fleet_report(db, kRanks.at(opts->rank));
        });
        if (opts->json)
            std::cout << report_json(report, opts->rank).dump(2) << '\n';
        else if (opts->csv)
            print_csv(report);
        else
            print_text(report, opts->rank, opts->top);
    });
}

}  // namespace guestfrag::cli
