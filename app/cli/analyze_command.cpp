// placeholder until implemented
#include "app/cli/commands.hpp"
namespace guestfrag::cli { void add_analyze_command(CLI::App& app) { app.add_subcommand("analyze", "todo"); } }
