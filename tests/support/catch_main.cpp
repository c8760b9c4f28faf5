// SPDX-License-Identifier: GPL-2.0-or-later
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
    // In this process and the programs it runs: where a postgresql:// database's module is
    // (a test executable is not where an installed program finds it).
    setenv("GUESTFRAG_MODULE_DIR", GUESTFRAG_MODULE_DIR, 1);
    return Catch::Session().run(argc, argv);
}
