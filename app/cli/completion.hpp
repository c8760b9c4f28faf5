// SPDX-License-Identifier: GPL-2.0-or-later
// Shell completion made from the parser's own definition (`guestfrag completion bash`), so
// its subcommands, options and value lists cannot drift from what the program accepts.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace guestfrag::cli {

/// The values `option` completes to, read from the word help shows for it (value_word):
/// "a|b" (of CLI::IsMember's "{a,b}", also of one value, or of our validators, an optional
/// "[PREFIX=]" first);
/// a value written with an upper-case placeholder ("trace:SOURCE") completes to its prefix
/// ("trace:"). Empty when the option lists no values.
[[nodiscard]] std::vector<std::string> completion_values(const CLI::Option& option);

/// The bash completion script for `app` and its subcommands (it needs bash-completion).
[[nodiscard]] std::string bash_completion(const CLI::App& app);

/// Registers `completion bash`, which prints bash_completion(app) of the app it is in.
void add_completion_command(CLI::App& app);

}  // namespace guestfrag::cli
