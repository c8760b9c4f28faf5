// SPDX-License-Identifier: GPL-2.0-or-later
// qemu-img / qemu-io helpers shared by the container-format tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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

/// One extent of `qemu-img map --output=json` (depth 0 = the image named).
struct QemuExtent {
    std::uint64_t start = 0, length = 0;
    std::size_t depth = 0;
    bool present = false, zero = false, data = false;
    std::optional<std::uint64_t> offset;  ///< in the layer's file, where qemu knows it
};

/// `qemu-img map --output=json` of `image`, read as `format` when given (else qemu probes).
inline std::vector<QemuExtent> qemu_map(const std::filesystem::path& image, const std::string& format = {}) {
    std::vector<std::string> argv{"qemu-img", "map", "--output=json"};
    if (!format.empty()) argv.insert(argv.end(), {"-f", format});
    argv.push_back(image.string());
    const auto r = run(argv);
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::vector<QemuExtent> extents;
    for (const auto& e : nlohmann::json::parse(r.out)) {
        QemuExtent x;
        x.start = e.at("start").get<std::uint64_t>();
        x.length = e.at("length").get<std::uint64_t>();
        x.depth = e.at("depth").get<std::size_t>();
        x.present = e.at("present").get<bool>();
        x.zero = e.at("zero").get<bool>();
        x.data = e.at("data").get<bool>();
        if (e.contains("offset")) x.offset = e.at("offset").get<std::uint64_t>();
        extents.push_back(x);
    }
    return extents;
}

}  // namespace guestfrag::test
