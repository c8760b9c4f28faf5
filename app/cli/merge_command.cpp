// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag merge OUT IN...`: one results database from several (the shards of a fleet run).
#include <filesystem>
#include <iostream>
#include <system_error>
#include <memory>

#include "app/batch/results_db.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"

namespace guestfrag::cli {

void add_merge_command(CLI::App& app) {
    struct Options {
        std::string output;
        std::vector<std::string> inputs;
    };
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand("merge", "Merge batch results databases (e.g. the shards of one run) into one");
    cmd->add_option("OUT", opts->output, "Results database to merge into (created if missing)")->required();
    cmd->add_option("IN", opts->inputs, "Results databases to merge from")->required();
    cmd->callback([opts] {
        // OUT as an input would be attached to itself: SQLite then waits for its own lock
        // (the busy timeout) and the rows would be doubled. Refuse it by name first.
        std::error_code ec;
        for (const std::string& in : opts->inputs)
            if (in == opts->output || std::filesystem::equivalent(in, opts->output, ec))
                throw Failure(opts->output, "OUT is also given as an input (IN): a database cannot be merged into itself",
                              kUsage);
        on_behalf_of(opts->output, [&] {
            batch::ResultsDb out(opts->output, true);
            for (const std::string& in : opts->inputs) on_behalf_of(in, [&] { out.merge_from(in); });
        });
        std::cout << "merged " << opts->inputs.size() << " database(s) into " << opts->output << '\n';
    });
}

}  // namespace guestfrag::cli
