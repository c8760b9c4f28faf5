// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/help_format.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

namespace guestfrag::cli {
namespace {

/// `text` (one paragraph) in lines of at most `budget` columns, broken at spaces.
std::vector<std::string> lines_of(const std::string& text, std::size_t budget) {
    std::vector<std::string> lines(1);
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        std::string& line = lines.back();
        if (line.empty())
            line = word;
        else if (line.size() + 1 + word.size() <= budget)
            line += ' ' + word;
        else
            lines.push_back(word);
    }
    return lines;
}

std::string joined_names(const std::set<CLI::Option*>& options) {
    std::string out;
    for (const CLI::Option* o : options) out += (out.empty() ? "" : ", ") + o->get_name();
    return out;
}

/// The validators' part of a type name ("TEXT:{a,b}" -> "{a,b}"), and the type before it.
std::pair<std::string, std::string> type_parts(const CLI::Option& option) {
    const std::string type = option.get_type_name();
    const std::size_t colon = type.find(':');
    if (colon == std::string::npos) return {type, ""};
    return {type.substr(0, colon), type.substr(colon + 1)};
}

/// "[1 - 256]" of a CLI::Range's "UINT in [1 - 256]" as "1 to 256"; "" for another.
std::string range_of(const std::string& validators) {
    const std::size_t open = validators.find(" in [");
    const std::size_t dash = validators.find(" - ", open);
    if (open == std::string::npos || dash == std::string::npos || !validators.ends_with(']')) return {};
    return validators.substr(open + 5, dash - open - 5) + " to " +
           validators.substr(dash + 3, validators.size() - dash - 4);
}

/// Levenshtein distance: the edits (insert, delete, replace) that turn `a` into `b`.
std::size_t typos(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

/// The candidate nearest `word`, when it is within a third of its length (at least one edit).
std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t fewest = std::max<std::size_t>(1, word.size() / 3) + 1;
    for (const std::string& c : candidates)
        if (const std::size_t d = typos(word, c); d < fewest) {
            fewest = d;
            best = c;
        }
    return best;
}

std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> out;
    for (const CLI::Option* o : app.get_options()) {
        const std::vector<std::string> names = typed_names(*o);
        out.insert(out.end(), names.begin(), names.end());
    }
    return out;
}

}  // namespace

std::vector<std::string> typed_names(const CLI::Option& option) {
    std::vector<std::string> out;
    for (const std::string& s : option.get_snames()) out.push_back("-" + s);
    for (const std::string& l : option.get_lnames()) out.push_back("--" + l);
    return out;
}

std::string did_you_mean(const CLI::App& app, const std::vector<std::string>& args) {
    const auto subcommands = app.get_subcommands([](const CLI::App*) { return true; });
    const CLI::App* command = nullptr;
    for (const std::string& arg : args) {
        if (arg.starts_with('-')) continue;
        for (const CLI::App* sub : subcommands)
            if (sub->get_name() == arg) command = sub;
        if (command) break;
        std::vector<std::string> names;
        for (const CLI::App* sub : subcommands) names.push_back(sub->get_name());
        const std::string near = nearest(arg, names);
        return near.empty() ? std::string() : "did you mean " + near + "?";
    }
    std::vector<std::string> known = option_names(app);
    if (command) {
        const std::vector<std::string> own = option_names(*command);
        known.insert(known.end(), own.begin(), own.end());
    }
    for (const std::string& arg : args) {
        if (!arg.starts_with('-') || arg == "-" || arg == "--") continue;
        const std::string name = arg.substr(0, arg.find('='));
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        const std::string near = nearest(name, known);
        return near.empty() ? std::string() : "did you mean " + near + "?";
    }
    return {};
}

std::size_t help_width() {
    std::size_t columns = 80;
    winsize size{};
    if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
        columns = size.ws_col;
    else if (const char* env = std::getenv("COLUMNS"); env && std::atoi(env) > 0)
        columns = static_cast<std::size_t>(std::atoi(env));
    return std::clamp<std::size_t>(columns, 60, 160);
}

std::string wrapped(const std::string& text, std::size_t width, std::size_t indent) {
    const std::size_t budget = width > indent + 20 ? width - indent : 20;
    std::string out;
    std::istringstream paragraphs(text);
    bool first = true;
    for (std::string paragraph; std::getline(paragraphs, paragraph);)
        for (const std::string& line : lines_of(paragraph, budget)) {
            if (!first) out += '\n' + std::string(indent, ' ');
            out += line;
            first = false;
        }
    return out;
}

std::string value_word(const CLI::Option& option) {
    if (option.get_items_expected_max() == 0) return {};
    const auto [type, validators] = type_parts(option);
    const std::string number = type == "FLOAT" ? "NUMBER" : type == "INT" || type == "UINT" ? "N" : type;
    // A string nobody named otherwise is a file: an image, a plan, a model, a database.
    if (validators.empty()) return type == "TEXT" ? "FILE" : number;
    if (validators.starts_with('{') && validators.ends_with('}')) {
        std::string list = validators.substr(1, validators.size() - 2);
        std::replace(list.begin(), list.end(), ',', '|');
        return list;
    }
    if (!range_of(validators).empty() || validators == "NONNEGATIVE" || validators == "POSITIVE" ||
        validators == type)
        return number;
    return validators;
}

HelpFormatter::HelpFormatter(std::size_t width) : width_(width) { column_width(26); }

std::string HelpFormatter::row(const std::string& left, const std::string& description) const {
    const std::size_t column = get_column_width();
    std::string out = "  " + left;
    if (description.empty()) return out + '\n';
    if (out.size() + 2 <= column)
        out.resize(column, ' ');
    else
        out += '\n' + std::string(column, ' ');
    return out + wrapped(description, width_, column) + '\n';
}

std::string HelpFormatter::make_option_name(const CLI::Option* option, bool is_positional) const {
    if (is_positional) return option->get_name();
    std::string out;
    for (const std::string& name : typed_names(*option)) out += (out.empty() ? "" : ", ") + name;
    return out;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
    if (option->get_positional()) return option->get_expected_max() > 1 ? " ..." : "";
    std::string word = value_word(*option);
    if (word.empty()) return {};
    // A list too long to read beside the option goes by the option's name; its description
    // or the footer says the values.
    if (word.size() > 40 && !option->get_lnames().empty()) {
        word = option->get_lnames().front();
        std::transform(word.begin(), word.end(), word.begin(),
                       [](unsigned char c) { return c == '-' ? '_' : static_cast<char>(std::toupper(c)); });
    }
    return " " + word + (option->get_expected_max() > 1 ? " ..." : "");
}

std::string HelpFormatter::make_option_desc(const CLI::Option* option) const {
    std::string out = option->get_description();
    const auto add = [&out](const std::string& sentence) {
        if (!out.empty() && !out.ends_with('.')) out += '.';
        out += (out.empty() ? "" : " ") + sentence;
    };
    if (const std::string range = range_of(type_parts(*option).second); !range.empty())
        add("From " + range + ".");
    if (const std::string d = option->get_default_str();
        !d.empty() && out.find("default") == std::string::npos)
        add("Default: " + d + ".");
    if (option->get_required() && !option->get_positional()) add("Required.");
    // CLI11 returns these sets by value.
    if (const std::set<CLI::Option*> needs = option->get_needs(); !needs.empty())
        add("Needs " + joined_names(needs) + ".");
    if (const std::set<CLI::Option*> excludes = option->get_excludes(); !excludes.empty())
        add("Not with " + joined_names(excludes) + ".");
    return out;
}

std::string HelpFormatter::make_option(const CLI::Option* option, bool is_positional) const {
    return row(make_option_name(option, is_positional) + make_option_opts(option), make_option_desc(option));
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
    return row(sub->get_display_name(), sub->get_description());
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
    const std::string description = app->get_description();
    return description.empty() ? std::string() : wrapped(description, width_, 0) + '\n';
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
    // A footer's "  term   meaning" lines wrap under their meaning; other lines under
    // their own indent; a heading after the first starts a paragraph.
    std::string out;
    std::istringstream lines(app->get_footer());
    for (std::string line; std::getline(lines, line);) {
        const std::size_t lead = line.find_first_not_of(' ');
        if (lead == std::string::npos) {
            out += '\n';
            continue;
        }
        if (lead == 0 && !out.empty() && !out.ends_with("\n\n")) out += '\n';
        const std::size_t gap = line.find("  ", lead);
        const std::size_t meaning =
            gap == std::string::npos ? std::string::npos : line.find_first_not_of(' ', gap);
        const std::size_t indent = meaning == std::string::npos ? lead : meaning;
        out += line.substr(0, indent) + wrapped(line.substr(indent), width_, indent) + '\n';
    }
    return out;
}

}  // namespace guestfrag::cli
