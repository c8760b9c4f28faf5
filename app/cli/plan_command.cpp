// placeholder until implemented
#include "app/cli/commands.hpp"
namespace guestfrag::cli {
void add_plan_command(CLI::App& app) { app.add_subcommand("plan", "not implemented yet"); }
}  // namespace guestfrag::cli
