// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/completion.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "app/cli/commands.hpp"
#include "app/cli/help_format.hpp"

namespace guestfrag::cli {
namespace {

/// What the word after an option completes to.
enum class Takes { Nothing, Flag, Values, Files, Directories };

Takes takes(const CLI::Option& option) {
    const std::string word = value_word(option);
    if (word.empty()) return Takes::Flag;
    if (!completion_values(option).empty()) return Takes::Values;
    if (word == "DIR") return Takes::Directories;
    // Files, images, plans, models and databases name files; sizes, numbers, rates and
    // times complete to nothing.
    if (word == "FILE" || word == "IMAGE" || word == "GLOB" || word == "DB" || word.ends_with("PATH"))
        return Takes::Files;
    return Takes::Nothing;
}

std::string joined(const std::vector<std::string>& words, const char* between) {
    std::string out;
    for (const std::string& w : words) out += (out.empty() ? "" : between) + w;
    return out;
}

std::vector<const CLI::Option*> named_options(const CLI::App& app) {
    return app.get_options(
        [](const CLI::Option* o) { return !o->get_lnames().empty() || !o->get_snames().empty(); });
}

}  // namespace

std::vector<std::string> completion_values(const CLI::Option& option) {
    std::string word = value_word(option);
    if (word.starts_with('[')) word.erase(0, word.find(']') + 1);
    std::vector<std::string> out;
    // One value is a list only when CLI::IsMember made it ("TEXT:{bash}").
    if (word.find('|') == std::string::npos && option.get_type_name().find(":{") == std::string::npos)
        return out;
    std::istringstream list(word);
    for (std::string value; std::getline(list, value, '|');) {
        // "trace:SOURCE" is typed as "trace:" and then the source.
        const auto placeholder =
            std::find_if(value.begin(), value.end(), [](unsigned char c) { return std::isupper(c); });
        value.erase(placeholder, value.end());
        if (!value.empty()) out.push_back(value);
    }
    return out;
}

std::string bash_completion(const CLI::App& app) {
    std::ostringstream out;
    const std::string name = app.get_name();
    std::vector<std::string> global;  // accepted before and after the subcommand
    for (const CLI::Option* o : named_options(app))
        for (const std::string& n : typed_names(*o)) global.push_back(n);
    std::vector<std::string> subcommands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        subcommands.push_back(sub->get_name());

    out << "# bash completion for " << name << ", made by `" << name
        << " completion bash` from the program's own\n# option definitions (needs bash-completion).\n"
        << "_" << name << "() {\n"
        << "    local cur prev words cword\n"
        << "    _init_completion -n : || return\n"
        << "    local sub=\"\" i opts values=\"\" arguments=\"\"\n"
        << "    for ((i = 1; i < cword; i++)); do\n"
        << "        case ${words[i]} in\n"
        << "        -*) ;;\n"
        << "        *) sub=${words[i]}; break ;;\n"
        << "        esac\n"
        << "    done\n"
        << "    case $sub in\n"
        << "    \"\")\n"
        << "        COMPREPLY=($(compgen -W \"" << joined(subcommands, " ") << ' ' << joined(global, " ")
        << "\" -- \"$cur\"))\n"
        << "        return ;;\n";
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        std::vector<std::string> all;
        std::map<Takes, std::vector<std::string>> by_kind;
        std::vector<std::pair<std::string, std::vector<std::string>>> lists;
        std::vector<std::string> arguments;  // what a positional with a list completes to
        for (const CLI::Option* o :
             sub->get_options([](const CLI::Option* o) { return o->get_positional(); }))
            for (const std::string& value : completion_values(*o)) arguments.push_back(value);
        for (const CLI::Option* o : named_options(*sub)) {
            const std::vector<std::string> n = typed_names(*o);
            all.insert(all.end(), n.begin(), n.end());
            const Takes kind = takes(*o);
            if (kind == Takes::Values)
                lists.emplace_back(joined(n, "|"), completion_values(*o));
            else if (kind != Takes::Flag)
                by_kind[kind].insert(by_kind[kind].end(), n.begin(), n.end());
        }
        for (const std::string& g : global)
            if (g != "--help" && g != "-h" && g != "--version") all.push_back(g);
        out << "    " << sub->get_name() << ")\n"
            << "        opts=\"" << joined(all, " ") << "\"\n";
        if (!arguments.empty()) out << "        arguments=\"" << joined(arguments, " ") << "\"\n";
        out << "        case $prev in\n";
        for (const auto& [pattern, values] : lists)
            out << "        " << pattern << ") values=\"" << joined(values, " ") << "\" ;;\n";
        if (const auto& files = by_kind[Takes::Files]; !files.empty())
            out << "        " << joined(files, "|") << ") _filedir; return ;;\n";
        if (const auto& dirs = by_kind[Takes::Directories]; !dirs.empty())
            out << "        " << joined(dirs, "|") << ") _filedir -d; return ;;\n";
        if (const auto& none = by_kind[Takes::Nothing]; !none.empty())
            out << "        " << joined(none, "|") << ") return ;;\n";
        out << "        esac ;;\n";
    }
    out << "    *) return ;;\n"
        << "    esac\n"
        << "    if [[ -n $values ]]; then\n"
        << "        COMPREPLY=($(compgen -W \"$values\" -- \"$cur\"))\n"
        << "        # A prefix such as trace: takes the rest of the word.\n"
        << "        [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *: ]] && compopt -o nospace\n"
        << "        __ltrim_colon_completions \"$cur\"\n"
        << "    elif [[ $cur == -* ]]; then\n"
        << "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
        << "    elif [[ -n $arguments ]]; then\n"
        << "        COMPREPLY=($(compgen -W \"$arguments\" -- \"$cur\"))\n"
        << "    else\n"
        << "        _filedir\n"
        << "    fi\n"
        << "}\n"
        << "complete -F _" << name << ' ' << name << '\n';
    return out.str();
}

void add_completion_command(CLI::App& app) {
    auto shell = std::make_shared<std::string>();
    CLI::App* cmd =
        app.add_subcommand("completion", "Print the shell completion script (bash) for guestfrag");
    cmd->add_option("SHELL", *shell, "Shell to complete for")->required()->check(CLI::IsMember({"bash"}));
    cmd->footer("Example:\n  source <(guestfrag completion bash)\n");
    cmd->callback([cmd, shell] {
        if (*shell == "bash") std::cout << bash_completion(*cmd->get_parent());
    });
}

void add_commands(CLI::App& app) {
    add_analyze_command(app);
    add_plan_command(app);
    add_estimate_command(app);
    add_report_command(app);
    add_impact_command(app);
    add_batch_command(app);
    add_history_command(app);
    add_merge_command(app);
    add_fleet_command(app);
    add_schedule_command(app);
    add_apply_command(app);
    add_compact_command(app);
    add_calibrate_command(app);
    add_mkimage_command(app);
    add_completion_command(app);
}

}  // namespace guestfrag::cli
