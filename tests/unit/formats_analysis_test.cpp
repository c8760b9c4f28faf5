// SPDX-License-Identifier: GPL-2.0-or-later
// A guest disk analyses the same whatever container holds it: the raw disk converted by
// qemu-img into every format qemu writes gives the identical volumes section.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

nlohmann::json volumes_of(const fs::path& image) {
    // The verdict weighs each format's provisioning (docs/verdict.md); the analysis is compared.
    const auto r = test::run_cli({"analyze", image.string(), "--json", "--files", "--no-verdict"});
    INFO(image.string() << ": " << r.err);
    REQUIRE(r.status == 0);
    auto doc = nlohmann::json::parse(r.out);
    // Layer usage depends on each format's granule; everything else must be identical.
    for (auto& v : doc["volumes"]) v.erase("layers");
    return doc["volumes"];
}

}  // namespace

TEST_CASE("every container format qemu writes analyses like the raw disk", "[formats][cli]") {
    test::require_tools({"qemu-img"});
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 200;
    o.seed = 11;
    const fs::path raw = test::generated_image("formats-msdos", o);
    const auto expected = volumes_of(raw);
    REQUIRE(expected.size() == 1);

    const std::vector<std::pair<std::string, std::vector<std::string>>> formats = {
        {"qcow2", {"-O", "qcow2"}},
        {"qcow2c", {"-O", "qcow2", "-c"}},
        {"vmdk", {"-O", "vmdk", "-o", "subformat=monolithicSparse"}},
        {"vmdkso", {"-O", "vmdk", "-o", "subformat=streamOptimized"}},
        {"vmdk2g", {"-O", "vmdk", "-o", "subformat=twoGbMaxExtentSparse"}},
        {"vhd", {"-O", "vpc", "-o", "subformat=dynamic,force_size=on"}},
        {"vhdx", {"-O", "vhdx"}},
    };
    const fs::path dir = test::scratch_dir() / "formats";
    fs::create_directories(dir);
    for (const auto& [name, args] : formats) {
        const fs::path out = dir / ("disk-" + name + ".img");
        std::vector<std::string> argv{"qemu-img", "convert", "-f", "raw"};
        argv.insert(argv.end(), args.begin(), args.end());
        argv.push_back(raw.string());
        argv.push_back(out.string());
        const auto converted = test::run(argv);
        INFO(name << ": " << converted.err);
        REQUIRE(converted.status == 0);
        CHECK(volumes_of(out) == expected);
    }
    fs::remove_all(dir);
}
