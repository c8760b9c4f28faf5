// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag merge OUT IN...`: one results database from several (the shards of a fleet run).
#include <filesystem>
#include <iostream>
#include <system_error>
#include <memory>

#include "app/batch/database.hpp"
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
    cmd->add_option("OUT", opts->output,
                    "Results database to merge into: an SQLite file (created if missing) or a postgresql:// URI")
        ->required();
    cmd->add_option("IN", opts->inputs, "Results databases to merge from")->required();
    cmd->footer("Example:\n  guestfrag merge fleet.sqlite shard-1.sqlite shard-2.sqlite\n");
    cmd->callback([opts] {
        // OUT as an input would double its own rows (and wait for its own lock): refused by
        // name first.
        std::error_code ec;
        for (const std::string& in : opts->inputs)
            if (in == opts->output || std::filesystem::equivalent(in, opts->output, ec))
                throw Failure(batch::database_name(opts->output), "OUT is also given as an input (IN): a database cannot be merged into itself",
                              kUsage);
        const std::string out_name = batch::database_name(opts->output);
        on_behalf_of(out_name, [&] {
            batch::ResultsDb out(opts->output, true);
            for (const std::string& in : opts->inputs)
                on_behalf_of(batch::database_name(in), [&] { out.merge_from(in); });
        });
        std::cout << "merged " << opts->inputs.size() << " database(s) into " << out_name << '\n';
    });
}

}  // namespace guestfrag::cli
