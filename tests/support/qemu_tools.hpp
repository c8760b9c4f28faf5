// SPDX-License-Identifier: GPL-2.0-or-later
// qemu-img / qemu-io helpers shared by the container-format tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/fixtures.hpp"

namespace guestfrag::test {

/// Runs argv and requires exit status 0, showing the command and its output otherwise.
inline void run_ok(const std::vector<std::string>& argv) {
    const auto r = run(argv);
    std::string line;
    for (const auto& a : argv) line += a + " ";
    INFO(line << "\n" << r.err << r.out);
    REQUIRE(r.status == 0);
}

/// Applies qemu-io commands ("write -P 0xab 1M 64K", "write -z ...") to an image of `format`.
inline void qemu_io(const std::filesystem::path& image, const std::string& format,
                    const std::vector<std::string>& commands) {
    std::vector<std::string> argv{"qemu-io", "-f", format};
    for (const auto& c : commands) {
        argv.push_back("-c");
        argv.push_back(c);
    }
    argv.push_back(image.string());
    run_ok(argv);
}

}  // namespace guestfrag::test
