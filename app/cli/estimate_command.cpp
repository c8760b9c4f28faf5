// placeholder until implemented
#include "app/cli/commands.hpp"
namespace guestfrag::cli {
void add_estimate_command(CLI::App& app) { app.add_subcommand("estimate", "not implemented yet"); }
}  // namespace guestfrag::cli
