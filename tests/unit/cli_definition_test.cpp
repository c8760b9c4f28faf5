// SPDX-License-Identifier: GPL-2.0-or-later
// Help, the man page and bash completion are made from the parser's own definition: help
// fits 80 columns and speaks in words, every value completion offers is one the parser
// accepts, and the script, run by bash-completion, offers them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/commands.hpp"
#include "app/cli/completion.hpp"
#include "app/cli/help_format.hpp"
#include "core/plan/planner.hpp"
#include "support/fixtures.hpp"

namespace {

using namespace guestfrag;
namespace fs = std::filesystem;

/// The value a completed prefix ("trace:") stands for, as a user would finish it.
const std::map<std::string, std::string> kFinished = {{"trace:", "trace:paths.txt"},
                                                      {"write:", "write:100"},
                                                      {"fio:", "fio:rw=randread"},
                                                      {"install:", "install:10"}};

/// What bash-completion offers for `line` (the cursor at its end).
std::vector<std::string> complete(const fs::path& script, const std::string& line) {
    const std::string program =
        "source /usr/share/bash-completion/bash_completion; source \"$1\"; COMP_LINE=$2; "
        "COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< \"$COMP_LINE\"; "
        "[[ $COMP_LINE == *' ' ]] && COMP_WORDS+=(''); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
        "_guestfrag; printf '%s\\n' \"${COMPREPLY[@]}\"";
    const test::CommandResult r = test::run({"bash", "-c", program, "complete", script.string(), line});
    REQUIRE(r.status == 0);
    std::vector<std::string> words;
    std::istringstream in(r.out);
    for (std::string w; std::getline(in, w);)
        if (!w.empty()) words.push_back(w);
    return words;
}

}  // namespace

TEST_CASE("every value completion offers is one the option's parser accepts", "[cli][completion]") {
    CLI::App app{"", "guestfrag"};
    cli::add_commands(app);
    std::size_t checked = 0;
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        for (CLI::Option* option : sub->get_options()) {
            for (const std::string& value : cli::completion_values(*option)) {
                INFO(sub->get_name() << ' ' << option->get_name() << ' ' << value);
                std::string text = value.ends_with(':') ? kFinished.at(value) : value;
                CHECK((*option->get_validator(0))(text).empty());
                ++checked;
            }
        }
    CHECK(checked > 50);

    const auto values = [&](const char* sub, const char* name) {
        return cli::completion_values(*app.get_subcommand(sub)->get_option(name));
    };
    std::vector<std::string> strategies;
    for (const Strategy s : kStrategies) strategies.emplace_back(strategy_name(s));
    for (const char* sub : {"plan", "report", "batch"}) CHECK(values(sub, "--strategy") == strategies);
    CHECK(values("plan", "--order") == std::vector<std::string>{"size", "mft", "path", "trace:"});
    CHECK(values("estimate", "--workload") == values("report", "--workload"));
    CHECK(values("analyze", "--format") == std::vector<std::string>{"raw", "qcow2", "vmdk", "vhdx", "vhd"});
    CHECK(values("analyze", "--provisioning") == std::vector<std::string>{"thin", "lazy", "eager"});
    // apply writes raw and qcow2 only; compact writes every format it reads but vhd.
    CHECK(values("apply", "--output-format") == std::vector<std::string>{"raw", "qcow2"});
    CHECK(values("compact", "--output-format") == std::vector<std::string>{"raw", "qcow2", "vmdk", "vhdx"});
    CHECK(cli::completion_values(*app.get_subcommand("plan")->get_option("--max-moved")).empty());
}

TEST_CASE("the completion script, run by bash-completion, offers the parser's values", "[cli][completion]") {
    test::require_tools({"bash"});
    if (!fs::exists("/usr/share/bash-completion/bash_completion"))
        throw std::runtime_error(
            "test oracle missing: bash-completion (see packaging/debian-build-deps.txt)");
    const test::CommandResult made = test::run_cli({"completion", "bash"});
    REQUIRE(made.status == 0);
    const test::WorkDir work("completion");
    const fs::path script = work / "guestfrag.bash";
    std::ofstream(script) << made.out;

    using Words = std::vector<std::string>;
    CHECK(complete(script, "guestfrag plan disk.img --strategy o") == Words{"optimize"});
    CHECK(complete(script, "guestfrag apply disk.img --output-format ") == Words{"raw", "qcow2"});
    CHECK(complete(script, "guestfrag report disk.img --workload trace:@") == Words{"@prefetch", "@layout"});
    CHECK(complete(script, "guestfrag estimate disk.img --workload sc") ==
          Words{"scan", "scan:mft", "scan:path"});
    CHECK(complete(script, "guestfrag analyze disk.img --provisioning ") == Words{"thin", "lazy", "eager"});
    CHECK(complete(script, "guestfrag plan disk.img --st") == Words{"--strategy", "--stats"});
    CHECK(complete(script, "guestfrag com") == Words{"compact", "completion"});
    CHECK(complete(script, "guestfrag completion ") == Words{"bash"});
    // A size completes to nothing; a plan file to the files here.
    CHECK(complete(script, "guestfrag plan disk.img --max-moved ").empty());
    const fs::path dir = work / "files";
    fs::create_directories(dir);
    std::ofstream(dir / "p.json") << "{}";
    const test::CommandResult files = test::run(
        {"bash", "-c",
         "cd \"$1\" && source /usr/share/bash-completion/bash_completion && source \"$2\" && "
         "COMP_LINE='guestfrag apply disk.img --plan p'; COMP_POINT=${#COMP_LINE}; "
         "COMP_WORDS=(guestfrag apply disk.img --plan p); COMP_CWORD=4; _guestfrag; echo \"${COMPREPLY[*]}\"",
         "complete", dir.string(), script.string()});
    CHECK(files.out == "p.json\n");
}

TEST_CASE("help fits 80 columns, names values in words and shows an example for every command",
          "[cli][help]") {
    CLI::App app{"", "guestfrag"};
    cli::add_commands(app);
    std::vector<std::string> commands{""};
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        commands.push_back(sub->get_name());
    CHECK(commands.size() == 16);
    for (const std::string& command : commands) {
        INFO(command);
        // Not a terminal and no COLUMNS: 80.
        const test::CommandResult r = test::run(
            {"env", "-u", "COLUMNS", GUESTFRAG_CLI, command.empty() ? "--help" : command, "--help"});
        REQUIRE(r.status == 0);
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            INFO(line);
            CHECK(line.size() <= 80);
            // CLI11's own syntax never shows: types, defaults, flag negations, REQUIRED.
            for (const char* leak : {"TEXT", "FLOAT", "UINT", "INT ", "{false}", "REQUIRED", "Excludes:"})
                CHECK(line.find(leak) == std::string::npos);
        }
        if (!command.empty()) CHECK(r.out.find("\nExample") != std::string::npos);
    }
    const test::CommandResult plan = test::run({"env", "COLUMNS=100", GUESTFRAG_CLI, "plan", "--help"});
    CHECK(plan.out.find(
              "  --strategy STRATEGY     What the plan does (see Strategies below). Default: defrag.\n") !=
          std::string::npos);
    CHECK(plan.out.find("\n  thin-safe       defrag into clusters the top layer already holds") !=
          std::string::npos);
    CHECK(plan.out.find("  --nbd-timeout NUMBER    ") != std::string::npos);
    CHECK(plan.out.find("From 0.001 to 86400. Default: 60.") != std::string::npos);
    CHECK(plan.out.find("Not with --order, --frontier.") != std::string::npos);
}

TEST_CASE("help wraps text at the width it is given, a long word whole", "[cli][help]") {
    // 20 columns of room after an indent of 26.
    CHECK(cli::wrapped("one two three four five six", 46, 26) ==
          "one two three four\n" + std::string(26, ' ') + "five six");
    CHECK(cli::wrapped("one two three four", 80, 26) == "one two three four");
    // Never under 20 columns of room; a word longer than that stays whole.
    CHECK(cli::wrapped("aaaaaaaaaaaaaaaaaaaaaaaaa b", 30, 26) ==
          "aaaaaaaaaaaaaaaaaaaaaaaaa\n" + std::string(26, ' ') + "b");
    CHECK(cli::wrapped("first\nsecond line", 80, 4) == "first\n    second line");
}

TEST_CASE("a mistyped command or option is a usage error that names the nearest one", "[cli][help]") {
    CLI::App app{"", "guestfrag"};
    cli::add_commands(app);
    CHECK(cli::did_you_mean(app, {"analyze", "disk.img", "--jsn"}) == "did you mean --json?");
    CHECK(cli::did_you_mean(app, {"reprot", "disk.img"}) == "did you mean report?");
    // Nothing near: no guess.
    CHECK(cli::did_you_mean(app, {"frobnicate"}).empty());
    CHECK(cli::did_you_mean(app, {"plan", "disk.img", "--colour"}).empty());

    const test::CommandResult option = test::run_cli({"plan", "disk.img", "--stratgy", "defrag"});
    CHECK(option.status == 1);
    CHECK(option.err.find("guestfrag: did you mean --strategy?\n") != std::string::npos);
    const test::CommandResult command = test::run_cli({"plann", "disk.img"});
    CHECK(command.status == 1);
    CHECK(command.err.find("guestfrag: did you mean plan?\n") != std::string::npos);
}
