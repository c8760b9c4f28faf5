// SPDX-License-Identifier: GPL-2.0-or-later
// The one table of image formats: printed names, families and qemu's names.
#include <filesystem>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/image/open_image.hpp"
#include "support/qemu_tools.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

TEST_CASE("every image format has one printed name, one family and qemu's name where guestfrag reads it",
          "[image][formats]") {
    // The names are printed in reports, JSON and the batch database, and a family's qemu
    // name is what a qcow2 backing-format extension holds: changing any is a format change.
    struct Row {
        ImageFormat format;
        std::string_view name;
        ImageFormat family;
        std::string_view qemu_name;
    };
    const Row expected[] = {
        {ImageFormat::Raw, "raw", ImageFormat::Raw, "raw"},
        {ImageFormat::Qcow2, "qcow2", ImageFormat::Qcow2, "qcow2"},
        {ImageFormat::Vmdk, "vmdk", ImageFormat::Vmdk, "vmdk"},
        {ImageFormat::VmdkSparse, "vmdk sparse", ImageFormat::Vmdk, ""},
        {ImageFormat::VmdkDescriptor, "vmdk descriptor", ImageFormat::Vmdk, ""},
        {ImageFormat::VmdkCowd, "vmdk cowd (vmfsSparse)", ImageFormat::Vmdk, ""},
        {ImageFormat::VmdkSeSparse, "vmdk seSparse", ImageFormat::Vmdk, ""},
        {ImageFormat::Vhdx, "vhdx", ImageFormat::Vhdx, "vhdx"},
        {ImageFormat::Vhd, "vhd", ImageFormat::Vhd, "vpc"},
        {ImageFormat::Vdi, "vdi", ImageFormat::Vdi, ""},
        {ImageFormat::Qed, "qed", ImageFormat::Qed, ""},
    };
    REQUIRE(std::size(image_formats) == std::size(expected));

    std::set<std::string_view> names;
    for (const Row& row : expected) {
        INFO(row.name);
        CHECK(format_name(row.format) == row.name);
        CHECK(format_family(row.format) == row.family);
        CHECK(format_family(row.family) == row.family);
        if (!row.qemu_name.empty()) CHECK(format_from_qemu_name(row.qemu_name) == row.format);
        names.insert(format_name(row.format));
    }
    CHECK(names.size() == std::size(expected));

    // Our own names where qemu's differ, and formats guestfrag has no reader for, are no
    // qemu names: a qcow2 child recording them has a parent guestfrag refuses.
    for (const std::string_view name : {"vhd", "vpc ", "VMDK", "vmdk sparse", "vdi", "qed", ""}) {
        INFO(name);
        CHECK_FALSE(format_from_qemu_name(name).has_value());
    }
}

TEST_CASE("qemu's name of an image's format is the family guestfrag detects and opens it as",
          "[image][formats][qemu]") {
    test::require_tools({"qemu-img"});
    const fs::path dir = test::scratch_dir() / "image-formats";
    fs::create_directories(dir);
    struct Case {
        std::string format;
        std::vector<std::string> options;
    };
    const Case cases[] = {{"raw", {}},
                          {"qcow2", {}},
                          {"vmdk", {}},
                          {"vmdk", {"-o", "subformat=streamOptimized"}},
                          {"vmdk", {"-o", "subformat=monolithicFlat"}},
                          {"vpc", {}},
                          {"vhdx", {}}};
    int n = 0;
    for (const Case& c : cases) {
        const fs::path image = dir / ("image" + std::to_string(n++) + "." + c.format);
        fs::remove(image);
        std::vector<std::string> create{"qemu-img", "create", "-q", "-f", c.format};
        create.insert(create.end(), c.options.begin(), c.options.end());
        create.insert(create.end(), {image.string(), "8M"});
        test::run_ok(create);
        const auto info = test::run({"qemu-img", "info", "--output=json", image.string()});
        INFO(image.string() << "\n" << info.err);
        REQUIRE(info.status == 0);
        const std::string qemu_says = nlohmann::json::parse(info.out).at("format").get<std::string>();
        CHECK(qemu_says == c.format);

        const auto family = format_from_qemu_name(qemu_says);
        REQUIRE(family.has_value());
        CHECK(format_family(sniff_format(image.string())) == *family);
        CHECK(open_image(image.string())->format() == *family);
    }
}
