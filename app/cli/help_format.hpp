// SPDX-License-Identifier: GPL-2.0-or-later
// Help for people (and the man page made from it): wrapped at the terminal's width, each
// option's value named in words, defaults and relations said in the description.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace guestfrag::cli {

/// The width help is wrapped at: the terminal's columns when standard output is one, else
/// $COLUMNS when set (make-manpages.sh sets it for the man page's indent), else 80; at
/// least 60 and at most 160.
[[nodiscard]] std::size_t help_width();

/// `text` broken into lines of at most `width` columns at spaces (a word longer than that
/// stays whole), every line but the first indented by `indent` spaces; its own newlines
/// are kept.
[[nodiscard]] std::string wrapped(const std::string& text, std::size_t width, std::size_t indent);

/// CLI11's help with the layout above: "  --name, -n WORD  description" where WORD is the
/// validator's word ("SIZE", "raw|qcow2") or the type's (FILE, N, NUMBER), never CLI11's
/// "TEXT:{a,b}=x" syntax; the default, "needs" and "not with" follow the description.
class HelpFormatter : public CLI::Formatter {
public:
    explicit HelpFormatter(std::size_t width);

    std::string make_option_name(const CLI::Option* option, bool is_positional) const override;
    std::string make_option_opts(const CLI::Option* option) const override;
    std::string make_option_desc(const CLI::Option* option) const override;
    std::string make_option(const CLI::Option* option, bool is_positional) const override;
    std::string make_subcommand(const CLI::App* sub) const override;
    std::string make_description(const CLI::App* app) const override;
    std::string make_footer(const CLI::App* app) const override;

private:
    /// "  LEFT  description" with the description wrapped in the right column.
    [[nodiscard]] std::string row(const std::string& left, const std::string& description) const;

    std::size_t width_;
};

/// For a command line `args` (without the program) that `app` refused: "did you mean
/// --strategy?" for the first option name no command has, or "did you mean plan?" for a
/// command that does not exist, when one is within a few typos of it; "" otherwise.
[[nodiscard]] std::string did_you_mean(const CLI::App& app, const std::vector<std::string>& args);

/// An option's names as typed: "-o", "--output".
[[nodiscard]] std::vector<std::string> typed_names(const CLI::Option& option);

/// The word an option's value is shown with (see HelpFormatter); "" for a flag.
[[nodiscard]] std::string value_word(const CLI::Option& option);

}  // namespace guestfrag::cli
