// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag history IMAGE`: a volume's fragmentation over the runs recorded by `batch`.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/batch/database.hpp"
#include "app/batch/results_db.hpp"
#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

void add_history_command(CLI::App& app) {
    struct Options {
        std::string image;
        std::string db = "guestfrag.sqlite";
        std::optional<int> partition;
        bool json = false;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("history", "Fragmentation of an image's volumes over the batch runs recorded");
    cmd->add_option("IMAGE", opts->image, "Disk image as the batch named it (relative paths are made absolute)")
        ->required();
    cmd->add_option("--db", opts->db, "Results database: an SQLite file or a postgresql:// URI")
        ->type_name("DB")
        ->capture_default_str();
    cmd->add_option("--partition", opts->partition, "Only this partition");
    cmd->add_flag("--json", opts->json, "Print the rows as a JSON array");
    cmd->footer("Example:\n  guestfrag history /datastore/vm1.vmdk --db guestfrag.sqlite\n");
    cmd->callback([opts] {
        const std::string path = std::filesystem::absolute(opts->image).lexically_normal().string();
        std::vector<batch::HistoryRow> rows;
        const std::string db_name = batch::database_name(opts->db);
        on_behalf_of(db_name, [&] { rows = batch::ResultsDb(opts->db, false).history(path, opts->partition); });
        if (rows.empty()) throw Failure(opts->image, "no results in " + db_name + " (run `guestfrag batch` first)", kBadInput);
        if (opts->json) {
            nlohmann::ordered_json out = nlohmann::ordered_json::array();
            for (const batch::HistoryRow& r : rows)
                out.push_back(
                    {{"analyzed_at", r.analyzed_at},
                     {"status", r.status},
                     {"error", r.error},
                     {"partition", r.partition},
                     {"fragmentation_percent", r.fragmentation_percent},
                     {"fragmented_files", r.fragmented_files},
                     {"excess_fragments", r.excess_fragments},
                     {"free_space_fragmentation_percent", r.free_space_fragmentation_percent},
                     {"free_extents", r.free_extents},
                     {"free_bytes", r.free_bytes},
                     {"host_seeks", r.host_seeks ? nlohmann::ordered_json(*r.host_seeks) : nullptr},
                     {"host_fragmentation_percent",
                      r.host_fragmentation_percent ? nlohmann::ordered_json(*r.host_fragmentation_percent)
                                                   : nullptr}});
            std::cout << out.dump(2) << '\n';
            return;
        }
        std::cout << "History of " << path << "\n\n"
                  << pad("analysed (UTC)", 22) << pad("part", 5, true) << pad("files %", 10, true)
                  << pad("fragmented", 12, true) << pad("excess", 10, true) << pad("free %", 9, true)
                  << pad("free ext", 10, true) << pad("free", 12, true) << pad("host %", 9, true) << '\n';
        std::map<int, std::pair<double, double>> trend;  // partition -> (first, last) fragmentation %
        for (const batch::HistoryRow& r : rows) {
            if (r.status != "ok") {
                std::cout << pad(r.analyzed_at, 22) << "  failed: " << r.error << '\n';
                continue;
            }
            trend.try_emplace(r.partition, r.fragmentation_percent, 0).first->second.second = r.fragmentation_percent;
            std::cout << pad(r.analyzed_at, 22) << pad(std::to_string(r.partition), 5, true)
                      << pad(fixed(r.fragmentation_percent, 2), 10, true)
                      << pad(std::to_string(r.fragmented_files), 12, true)
                      << pad(std::to_string(r.excess_fragments), 10, true)
                      << pad(fixed(r.free_space_fragmentation_percent, 1), 9, true)
                      << pad(std::to_string(r.free_extents), 10, true)
                      << pad(format_size(r.free_bytes), 12, true)
                      // Rows stored before schema 2 did not measure the image file's layout.
                      << pad(r.host_fragmentation_percent ? fixed(*r.host_fragmentation_percent, 2) : "-", 9,
                             true)
                      << '\n';
        }
        std::cout << '\n';
        for (const auto& [partition, t] : trend)
            std::cout << "partition " << partition << ": file fragmentation " << fixed(t.first, 2) << " % -> "
                      << fixed(t.second, 2) << " %\n";
    });
}

}  // namespace guestfrag::cli
