// placeholder until implemented
#include "app/cli/commands.hpp"
namespace guestfrag::cli { void add_mkimage_command(CLI::App& app) { app.add_subcommand("mkimage", "todo"); } }
