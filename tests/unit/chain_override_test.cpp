// SPDX-License-Identifier: GPL-2.0-or-later
// Parents given with --parent (by depth, by recorded name, bare) over chains of two and
// three layers made by qemu-img from a generated NTFS disk, with qemu-img map as the oracle
// of each layer's allocation; --format; and a truncated fixed VHD, read as far as its data
// goes, against The Sleuth Kit reading the same bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzers/analysis.hpp"
#include "core/error.hpp"
#include "core/image/open_chain.hpp"
#include "core/image/open_image.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/tsk_oracle.hpp"
#include "support/vhd_writer.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using Json = nlohmann::json;
using guestfrag::test::kind_of;
using guestfrag::test::run_ok;

namespace {

constexpr std::uint64_t MiB = 1024 * 1024;

MkImageOptions small_msdos() {
    MkImageOptions o;
    o.disk_size = 32 * MiB;
    o.table = "msdos";
    o.files = 200;
    o.seed = 11;
    return o;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Bytes each layer file stores itself, by qemu: its own map's data extents at depth 0.
std::uint64_t qemu_own_data(const fs::path& image) {
    std::uint64_t bytes = 0;
    for (const test::QemuExtent& e : test::qemu_map(image, "qcow2"))
        if (e.depth == 0 && e.data) bytes += e.length;
    return bytes;
}

/// base.qcow2 ← mid.qcow2 ← top.qcow2 over a generated NTFS disk; mid and top each write
/// into the gap before the first partition, so the volume stays intact.
struct Chain {
    test::WorkDir dir{"chain3"};
    fs::path base = dir / "base.qcow2";
    fs::path mid = dir / "mid.qcow2";
    fs::path top = dir / "top.qcow2";
    std::vector<std::uint64_t> own;  ///< qemu's bytes stored by top, mid, base

    Chain() {
        test::require_tools({"qemu-img", "qemu-io"});
        const fs::path raw = test::generated_image("chain-ntfs", small_msdos());
        run_ok({"qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2", raw.string(), base.string()});
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.qcow2", "-F", "qcow2", mid.string()});
        test::qemu_io(mid, "qcow2", {"write -P 0x11 64K 256K"});
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "mid.qcow2", "-F", "qcow2", top.string()});
        test::qemu_io(top, "qcow2", {"write -P 0x22 512K 128K"});
        own = {qemu_own_data(top), qemu_own_data(mid), qemu_own_data(base)};
        REQUIRE(own[0] > 0);
        REQUIRE(own[1] > 0);
        REQUIRE(own[2] > own[1]);
    }
};

}  // namespace

TEST_CASE("parent overrides: --parent values are DEPTH=PATH, NAME=PATH or a bare PATH", "[image][chain]") {
    const auto depth = parse_parent_override("2=/a/base.qcow2");
    REQUIRE(depth);
    CHECK(depth->depth == 2);
    CHECK(depth->name.empty());
    CHECK(depth->path == "/a/base.qcow2");
    const auto named = parse_parent_override("base.qcow2=/a/b=c.qcow2");
    REQUIRE(named);
    CHECK(named->depth == 0);
    CHECK(named->name == "base.qcow2");
    CHECK(named->path == "/a/b=c.qcow2");  // only the first '=' separates
    const auto bare = parse_parent_override("/a/base.qcow2");
    REQUIRE(bare);
    CHECK(bare->depth == 1);  // the image's own parent
    CHECK(bare->text() == "1=/a/base.qcow2");
    for (const char* bad : {"", "=x", "0=x", "2=", "base.qcow2=", "99999999999999999999999=x"}) {
        INFO(bad);
        CHECK_FALSE(parse_parent_override(bad));
    }
}

TEST_CASE("a three-layer chain whose base moved: the message names the layer and depth, "
          "--parent must say which layer it is",
          "[cli][chain][qcow2]") {
    const Chain c;
    fs::create_directory(c.dir / "moved");
    const fs::path moved = c.dir / "moved" / "base.qcow2";
    fs::rename(c.base, moved);

    SECTION("without --parent: exit 2 naming mid, its depth and the option that helps") {
        const auto r = test::run_cli({"analyze", c.top.string()});
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(contains(r.err, c.mid.string() + " (depth 1) records parent base.qcow2"));
        CHECK(contains(r.err, "give it with --parent 2=PATH"));
    }
    SECTION("--parent 2=PATH and --parent NAME=PATH give the whole chain, as qemu maps it") {
        for (const std::string& given : {"2=" + moved.string(), "base.qcow2=" + moved.string()}) {
            INFO(given);
            const auto r = test::run_cli({"analyze", c.top.string(), "--parent", given, "--json"});
            INFO(r.err);
            REQUIRE(r.status == 0);
            const Json doc = Json::parse(r.out);
            const Json& layers = doc["image"]["layers"];
            REQUIRE(layers.size() == 3);
            CHECK(layers[1]["path"] == c.mid.string());
            CHECK(layers[2]["path"] == moved.string());
            for (std::size_t d = 0; d < 3; ++d) {
                INFO("depth " << d);
                CHECK(layers[d]["allocated_bytes"].get<std::uint64_t>() == c.own[d]);
            }
            REQUIRE(doc["volumes"].size() == 1);
        }
    }
    SECTION("a bare --parent, or one for depth 1, would drop mid: refused") {
        for (const std::string& given : {moved.string(), "1=" + moved.string()}) {
            INFO(given);
            const auto r = test::run_cli({"analyze", c.top.string(), "--parent", given});
            INFO(r.err);
            CHECK(r.status == 2);
            CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
            CHECK(contains(r.err, "--parent 1=" + moved.string() + " is not the parent " + c.top.string() +
                                      " (depth 0) records, mid.qcow2"));
        }
    }
    SECTION("a parent of the right name but another size is refused") {
        fs::create_directory(c.dir / "other");
        const fs::path other = c.dir / "other" / "base.qcow2";
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", other.string(), "48M"});
        const auto r = test::run_cli({"analyze", c.top.string(), "--parent", "2=" + other.string()});
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(contains(r.err, "--parent 2=" + other.string() + " is a disk of 50331648 bytes, but its child " +
                                  c.mid.string() + " is 33554432 bytes"));
    }
    SECTION("a parent for a depth the chain does not have, or two for one depth, is refused") {
        std::string message;
        CHECK(kind_of([&] { (void)open_chain(c.top.string(), {{2, {}, moved.string()}, {3, {}, moved.string()}}); },
                      &message) == ErrorKind::Unsupported);
        CHECK(contains(message, "gives a parent at depth 3, but the chain ends at " + moved.string() + " (depth 2)"));
        CHECK(kind_of([&] { (void)open_chain(c.top.string(), {{2, {}, moved.string()}, {0, "base.qcow2", moved.string()}}); },
                      &message) == ErrorKind::Unsupported);
        CHECK(contains(message, "both give the parent at depth 2"));
        fs::rename(moved, c.base);
        CHECK(kind_of([&] { (void)open_chain(c.top.string(), {{0, "nothing.qcow2", c.base.string()}}); }, &message) ==
              ErrorKind::Unsupported);
        CHECK(contains(message, "no layer of the chain records a parent named nothing.qcow2"));
    }
    SECTION("malformed values are usage errors") {
        const auto r = test::run_cli({"analyze", c.top.string(), "--parent", "0=" + moved.string()});
        CHECK(r.status == 1);
        CHECK(contains(r.err, "is not PATH, DEPTH=PATH or NAME=PATH"));
    }
}

TEST_CASE("a given VHD parent is checked by the unique id its child records", "[image][chain][vhd]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("vhd-given");
    const std::uint64_t size = 4 * MiB;
    for (const char* name : {"a.vhd", "b.vhd"})
        run_ok({"qemu-img", "create", "-q", "-f", "vpc", "-o", "subformat=dynamic,force_size=on", (dir / name).string(),
                std::to_string(size)});
    test::VhdSpec spec;
    spec.disk_type = 4;
    spec.virtual_size = size;
    spec.unique_id[0] = 0xc1;
    spec.parent_id = test::vhd_unique_id(dir / "a.vhd");
    spec.parent_name = "gone.vhd";
    REQUIRE(spec.parent_id != test::vhd_unique_id(dir / "b.vhd"));
    test::write_vhd(dir / "child.vhd", spec);

    // Under any name, the parent with the recorded id is taken, and no other.
    fs::rename(dir / "a.vhd", dir / "renamed.vhd");
    CHECK(open_chain((dir / "child.vhd").string(), {{1, {}, (dir / "renamed.vhd").string()}})->layers().size() == 2);
    std::string message;
    CHECK(kind_of([&] { (void)open_chain((dir / "child.vhd").string(), {{1, {}, (dir / "b.vhd").string()}}); },
                  &message) == ErrorKind::Corrupt);
    CHECK(contains(message, "--parent 1=" + (dir / "b.vhd").string() + " (depth 1) is not the one " +
                                (dir / "child.vhd").string() + " was made from"));
    CHECK(contains(message, "(expected id "));
}

TEST_CASE("a truncated fixed VHD is analysed as far as its data goes, with a warning", "[cli][vhd][tsk]") {
    test::require_tools({"istat", "mmls"});
    const fs::path raw = test::generated_image("chain-ntfs", small_msdos());
    const test::WorkDir dir("vhd-truncated");
    const fs::path vhd = dir / "cut.vhd";
    // The disk was 48 MiB; its last 16 MiB, past the volume, are missing from the copy.
    fs::copy_file(raw, vhd);
    const std::uint64_t present = fs::file_size(raw);
    test::append_fixed_vhd_footer(vhd, present + 16 * MiB);

    const auto r = test::run_cli({"analyze", vhd.string(), "--json", "--files"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err == "guestfrag: warning: " + vhd.string() + ": fixed vhd is truncated: its footer says " +
                       std::to_string(present + 16 * MiB) + " bytes of data, the file holds " +
                       std::to_string(present) + "; the last 16777216 bytes of the disk (from offset " +
                       std::to_string(present) + ") are missing, and whatever needs them fails\n");
    const Json doc = Json::parse(r.out);
    CHECK(doc["image"]["format"] == "vhd");
    CHECK(doc["image"]["virtual_size"] == present + 16 * MiB);
    // The same warning in the document, on the layer it is about.
    REQUIRE(doc["image"]["layers"][0]["warnings"].size() == 1);
    CHECK(r.err == "guestfrag: warning: " + vhd.string() + ": " +
                       doc["image"]["layers"][0]["warnings"][0].get<std::string>() + "\n");

    // The partitions and every file's extents are TSK's, reading the bytes present as raw.
    const auto disk = open_image(vhd.string());
    const ImageAnalysis a = analyze_image(*disk);
    const auto slots = test::mmls_partitions(raw);
    REQUIRE(a.table.partitions.size() == slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i) {
        CHECK(a.table.partitions[i].start == slots[i].first * 512);
        CHECK(a.table.partitions[i].length == slots[i].second * 512);
    }
    REQUIRE(a.volumes.size() == 1);
    const VolumeMap& map = a.volumes[0].map;
    std::map<std::uint64_t, std::map<std::string, test::Fragments>> ours;
    for (const Stream& s : map.streams)
        if (s.type == static_cast<std::uint32_t>(AttrType::Data))
            ours[s.mft_record][std::string(s.name)] = test::fragments_of(s, map.cluster_size);
    std::size_t compared = 0;
    for (const FileEntry& f : map.files) {
        INFO("record " << f.mft_record);
        const auto theirs = test::tsk_data_fragments(raw, map.partition_offset / 512, f.mft_record);
        const auto it = ours.find(f.mft_record);
        CHECK((it == ours.end() ? decltype(theirs){} : it->second) == theirs);
        compared += theirs.size();
    }
    CHECK(compared >= 100);
}

TEST_CASE("a fixed VHD cut inside its volume fails in one line that says why", "[cli][vhd]") {
    const fs::path raw = test::generated_image("chain-ntfs", small_msdos());
    const test::WorkDir dir("vhd-cut-short");
    const fs::path vhd = dir / "short.vhd";
    // 4 MiB of the 32: the volume's boot sector is there, its MFT mirror and most else not.
    fs::copy_file(raw, vhd);
    fs::resize_file(vhd, 4 * MiB);
    test::append_fixed_vhd_footer(vhd, fs::file_size(raw));
    const auto r = test::run_cli({"analyze", vhd.string()});
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.rfind("guestfrag: error: " + vhd.string() + ": ", 0) == 0);
    CHECK(contains(r.err, "; " + vhd.string() + ": fixed vhd is truncated: its footer says 33554432 bytes of data, "
                                               "the file holds 4194304"));
}

TEST_CASE("format override: --format overrides detection, and a wrong one is one line, exit 2", "[cli][image][detect]") {
    test::require_tools({"qemu-img"});
    const fs::path raw = test::generated_image("chain-ntfs", small_msdos());
    const test::WorkDir dir("format-option");
    const fs::path vhd = dir / "disk.vhd";
    run_ok({"qemu-img", "convert", "-q", "-f", "raw", "-O", "vpc", "-o", "subformat=fixed,force_size=on", raw.string(),
            vhd.string()});

    SECTION("raw on a fixed VHD reads the file as the disk, footer included") {
        const auto r = test::run_cli({"analyze", vhd.string(), "--format", "raw", "--json"});
        INFO(r.err);
        REQUIRE(r.status == 0);
        const Json doc = Json::parse(r.out);
        CHECK(doc["image"]["format"] == "raw");
        CHECK(doc["image"]["virtual_size"] == fs::file_size(vhd));
        CHECK(doc["image"]["layers"][0]["warnings"].empty());
        const auto detected = test::run_cli({"analyze", vhd.string(), "--json"});
        REQUIRE(detected.status == 0);
        CHECK(Json::parse(detected.out)["image"]["virtual_size"] == fs::file_size(raw));
    }
    SECTION("the detected family, given, is the same analysis") {
        const auto r = test::run_cli({"analyze", vhd.string(), "--format", "vhd", "--json"});
        REQUIRE(r.status == 0);
        CHECK(Json::parse(r.out)["image"]["format"] == "vhd");
    }
    SECTION("qcow2 on a raw file") {
        const auto r = test::run_cli({"analyze", raw.string(), "--format", "qcow2"});
        CHECK(r.status == 2);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(contains(r.err, "not a qcow2 image as --format says (its content is raw)"));
    }
    SECTION("a name that is not a readable family is a usage error") {
        for (const char* name : {"vpc", "vdi", "vmdk sparse"}) {
            const auto r = test::run_cli({"analyze", raw.string(), "--format", name});
            CHECK(r.status == 1);
            CHECK(contains(r.err, "is not one of raw|qcow2|vmdk|vhdx|vhd"));
        }
    }
}
