// SPDX-License-Identifier: GPL-2.0-or-later
// Host-level layout: where each layer's file keeps the guest's data. Checked by hand on a
// built layer, against `qemu-img map --output=json` offsets for the formats qemu maps,
// against the test VHDX writer's own block placement, and through `analyze --json`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/image/host_layout.hpp"
#include "core/image/open_image.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/vhd_writer.hpp"
#include "support/vhdx_writer.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr std::uint64_t K = 1024, M = K * K;

ByteSet::interval_type bytes(std::uint64_t lo, std::uint64_t hi) {
    return ByteSet::interval_type::right_open(lo, hi);
}

/// The layer's stored data as qemu reports it: depth-0 data extents with an offset,
/// joined where both the disk offset and the file offset continue.
std::vector<HostExtent> qemu_host_extents(const std::vector<test::QemuExtent>& map) {
    std::vector<HostExtent> out;
    for (const auto& e : map) {
        if (e.depth != 0 || !e.data || !e.offset) continue;
        if (!out.empty() && out.back().virtual_offset + out.back().length == e.start &&
            out.back().file_offset + out.back().length == *e.offset)
            out.back().length += e.length;
        else
            out.push_back({e.start, *e.offset, e.length, 0});
    }
    return out;
}

/// The first volume's bytes [begin, end) on the disk, from `analyze --json`: its clusters
/// only (the partition's last sector, NTFS's backup boot sector, lies outside them).
std::pair<std::uint64_t, std::uint64_t> first_volume(const Json& analysis) {
    const Json& volume = analysis["volumes"][0];
    const std::uint64_t start = analysis["partitions"][0]["start"];
    return {start, start + volume["total_clusters"].get<std::uint64_t>() *
                               volume["cluster_size"].get<std::uint64_t>()};
}

/// `extents` cut to the disk bytes [begin, end).
std::vector<HostExtent> clipped(const std::vector<HostExtent>& extents, std::uint64_t begin,
                                std::uint64_t end) {
    std::vector<HostExtent> out;
    for (const HostExtent& e : extents) {
        const std::uint64_t lo = std::max(e.virtual_offset, begin);
        const std::uint64_t hi = std::min(e.virtual_offset + e.length, end);
        if (lo < hi) out.push_back({lo, e.file_offset + (lo - e.virtual_offset), hi - lo, e.file});
    }
    return out;
}

/// The documented formulas (docs/metrics.md §6) over a whole single-file layer, counting
/// growth units one by one in a set rather than by range arithmetic.
HostLayout expected_layout(const std::vector<HostExtent>& extents, std::uint64_t unit) {
    HostLayout h;
    std::set<std::uint64_t> units;
    for (std::size_t i = 0; i < extents.size(); ++i) {
        const HostExtent& e = extents[i];
        h.stored_bytes += e.length;
        ++h.extents;
        for (std::uint64_t u = e.virtual_offset / unit; u * unit < e.virtual_offset + e.length; ++u)
            units.insert(u);
        if (i == 0) continue;
        const HostExtent& p = extents[i - 1];
        const std::uint64_t end = p.file_offset + p.length;
        if (e.file_offset < end) ++h.backward_seeks;
        if (e.file_offset < end || e.file_offset - end > kHostSeekGap) ++h.seeks;
    }
    h.granules = units.size();
    if (h.granules > 1)
        h.fragmentation_percent = 100.0 * static_cast<double>(h.seeks) / static_cast<double>(h.granules - 1);
    return h;
}

void check_same(const HostLayout& got, const HostLayout& want) {
    CHECK(got.stored_bytes == want.stored_bytes);
    CHECK(got.extents == want.extents);
    CHECK(got.seeks == want.seeks);
    CHECK(got.backward_seeks == want.backward_seeks);
    CHECK(got.granules == want.granules);
    CHECK(got.fragmentation_percent == Approx(want.fragmentation_percent));
}

}  // namespace

TEST_CASE("host layout counts extents, seeks and growth units as documented", "[analyzers][host]") {
    Layer layer;
    layer.granule_size = 64 * K;
    layer.growth_unit = 64 * K;
    layer.host_extents = {
        {0, 1 * M, 128 * K, 0},                 // units 0-1
        {128 * K, 3 * M, 64 * K, 0},            // unit 2; 1.875 MiB past A's end: a seek
        {192 * K, 3 * M + 576 * K, 64 * K, 0},  // unit 3; 512 KiB past B's end: read through
        {1 * M, 2 * M, 64 * K, 0},              // unit 16; behind C's end: a backward seek
        {1 * M + 64 * K, 0, 64 * K, 1},         // unit 17; another file: a seek
        {1 * M + 160 * K, 64 * K, 32 * K, 1},   // unit 18; continues E in its file: no seek
    };
    for (const HostExtent& e : layer.host_extents)
        layer.allocated.add(bytes(e.virtual_offset, e.virtual_offset + e.length));
    layer.allocated.add(bytes(2 * M, 2 * M + 256 * K));  // compressed: no place in the file

    const HostLayout all = analyze_host_layout(layer, 0, 4 * M);
    CHECK(all.stored_bytes == 416 * K);
    CHECK(all.unplaced_bytes == 256 * K);
    CHECK(all.extents == 6);
    CHECK(all.seeks == 3);
    CHECK(all.backward_seeks == 1);
    CHECK(all.granules == 7);
    CHECK(all.fragmentation_percent == Approx(50.0));  // 3 seeks over 6 unit steps

    // [160K, 1M+96K) clips B to its second half and E to its first: B, C, D, E remain.
    const HostLayout part = analyze_host_layout(layer, 160 * K, 1 * M + 96 * K);
    CHECK(part.stored_bytes == 192 * K);
    CHECK(part.unplaced_bytes == 0);
    CHECK(part.extents == 4);
    CHECK(part.seeks == 2);  // C → D backward, D → E another file
    CHECK(part.backward_seeks == 1);
    CHECK(part.granules == 4);
    CHECK(part.fragmentation_percent == Approx(200.0 / 3.0));

    CHECK(analyze_host_layout(layer, 4 * M, 8 * M).extents == 0);
    CHECK(analyze_host_layout(layer, 4 * M, 8 * M).fragmentation_percent == 0.0);

    // Two files inside one 2 MiB unit: one seek over zero unit steps reads as 100 %.
    Layer block;
    block.granule_size = 512;
    block.growth_unit = 2 * M;
    block.host_extents = {{0, 4 * M, 4 * K, 0}, {8 * K, 4 * M, 4 * K, 1}};
    for (const HostExtent& e : block.host_extents)
        block.allocated.add(bytes(e.virtual_offset, e.virtual_offset + e.length));
    const HostLayout b = analyze_host_layout(block, 0, 2 * M);
    CHECK(b.granules == 1);
    CHECK(b.seeks == 1);
    CHECK(b.fragmentation_percent == Approx(100.0));
}

TEST_CASE("host extents of qcow2, VMDK and VHD written out of order equal qemu-img map offsets",
          "[image][host][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const fs::path dir = test::scratch_dir() / "host-order";
    fs::create_directories(dir);
    // qemu allocates in the order of the writes, so the file holds 48M, 8M, 0, 32M, 9M.
    const std::vector<std::string> writes = {"write -P 1 48M 1M", "write -P 2 8M 1M", "write -P 3 0 1M",
                                             "write -P 4 32M 1M", "write -P 5 9M 1M"};
    for (const std::string format : {"qcow2", "vmdk", "vpc"}) {
        INFO(format);
        const fs::path image = dir / ("disk." + format);
        test::run_ok({"qemu-img", "create", "-q", "-f", format, image.string(), "64M"});
        test::qemu_io(image, format, writes);
        const auto expected = qemu_host_extents(test::qemu_map(image, format));
        REQUIRE(expected.size() >= 4);

        const auto disk = open_image(image.string());
        const Layer& layer = disk->layers().front();
        CHECK(layer.host_extents == expected);
        const HostLayout got = analyze_host_layout(layer, 0, disk->size());
        check_same(got, expected_layout(expected, layer.growth_unit));
        CHECK(got.backward_seeks >= 2);  // 8M and 32M lie before the data written ahead of them
    }
    fs::remove_all(dir);
}

TEST_CASE("twoGbMaxExtentSparse data in two extent files counts a seek between the files",
          "[image][host][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const fs::path dir = test::scratch_dir() / "host-split";
    fs::create_directories(dir);
    const fs::path image = dir / "split.vmdk";
    test::run_ok({"qemu-img", "create", "-q", "-f", "vmdk", "-o", "subformat=twoGbMaxExtentSparse",
                  image.string(), "5G"});
    test::qemu_io(image, "vmdk", {"write -P 1 3G 1M", "write -P 2 0 1M"});
    const auto expected = qemu_host_extents(test::qemu_map(image, "vmdk"));
    REQUIRE(expected.size() == 2);

    const auto disk = open_image(image.string());
    const auto& host = disk->layers().front().host_extents;
    REQUIRE(host.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(host[i].virtual_offset == expected[i].virtual_offset);
        CHECK(host[i].file_offset == expected[i].file_offset);
        CHECK(host[i].length == expected[i].length);
    }
    CHECK(host[0].file == 0);
    CHECK(host[1].file == 1);  // 3G lies in the second 2 GiB extent file
    const HostLayout got = analyze_host_layout(disk->layers().front(), 0, disk->size());
    CHECK(got.seeks == 1);
    CHECK(got.backward_seeks == 0);  // another file, not a jump back in this one
    fs::remove_all(dir);
}

TEST_CASE("VHDX blocks whose BAT entries point backwards are backward seeks", "[image][host][vhdx]") {
    const fs::path dir = test::scratch_dir() / "host-vhdx";
    fs::create_directories(dir);
    const fs::path image = dir / "swapped.vhdx";
    test::VhdxSpec spec;
    spec.virtual_size = 16 * M;
    test::VhdxWriter writer(spec);
    const std::vector<std::byte> data(2 * M, std::byte{0x5a});
    for (std::uint64_t block = 0; block < 3; ++block) writer.write(block * 2 * M, data);
    const test::VhdxLayout layout = writer.save(image);
    REQUIRE(layout.block_offsets.size() == 3);

    // Swap the BAT entries of blocks 0 and 2 (the BAT carries no checksum): block 0 now
    // lives where block 2 was, and the file holds the disk's blocks in reverse.
    auto entry_at = [&](std::uint64_t block) {
        return static_cast<std::streamoff>(layout.bat_offset + 8 * writer.payload_index(block));
    };
    {
        std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
        char first[8], last[8];
        f.seekg(entry_at(0)).read(first, 8);
        f.seekg(entry_at(2)).read(last, 8);
        f.seekp(entry_at(0)).write(last, 8);
        f.seekp(entry_at(2)).write(first, 8);
        REQUIRE(f.good());
    }
    const std::vector<HostExtent> expected = {{0, layout.block_offsets.at(2), 2 * M, 0},
                                              {2 * M, layout.block_offsets.at(1), 2 * M, 0},
                                              {4 * M, layout.block_offsets.at(0), 2 * M, 0}};
    const auto disk = open_image(image.string());
    const Layer& layer = disk->layers().front();
    CHECK(layer.growth_unit == 2 * M);
    CHECK(layer.host_extents == expected);
    const HostLayout got = analyze_host_layout(layer, 0, disk->size());
    CHECK(got.seeks == 2);
    CHECK(got.backward_seeks == 2);
    CHECK(got.granules == 3);
    CHECK(got.fragmentation_percent == Approx(100.0));
    fs::remove_all(dir);
}

TEST_CASE("raw images are their own file: host extents are the stored ranges in place", "[image][host]") {
    const fs::path dir = test::scratch_dir() / "host-raw";
    fs::create_directories(dir);
    const fs::path image = dir / "sparse.raw";
    {
        std::ofstream f(image, std::ios::binary);
        const std::string block(64 * K, 'x');
        f.seekp(static_cast<std::streamoff>(1 * M))
            .write(block.data(), static_cast<std::streamsize>(block.size()));
        f.seekp(static_cast<std::streamoff>(5 * M))
            .write(block.data(), static_cast<std::streamsize>(block.size()));
        f.seekp(static_cast<std::streamoff>(8 * M - 1)).put('\0');
    }
    const auto disk = open_image(image.string());
    const Layer& layer = disk->layers().front();
    std::vector<HostExtent> expected;
    for (const auto& stored : layer.allocated)
        expected.push_back({stored.lower(), stored.lower(), stored.upper() - stored.lower(), 0});
    CHECK(layer.host_extents == expected);
    CHECK(expected.size() >= 2);  // the file system keeps the holes between the writes
    const HostLayout got = analyze_host_layout(layer, 0, disk->size());
    CHECK(got.backward_seeks == 0);
    CHECK(got.unplaced_bytes == 0);
    fs::remove_all(dir);
}

TEST_CASE("analyze --json reports each layer's host layout for the disk and for each volume",
          "[cli][host][qemu]") {
    test::require_tools({"qemu-img"});
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 150;
    o.seed = 17;
    const fs::path raw = test::generated_image("host-layout", o);
    const fs::path dir = test::scratch_dir() / "host-cli";
    fs::create_directories(dir);
    const fs::path image = dir / "disk.qcow2";
    // Out-of-order writes from 8 coroutines scatter the clusters in the file.
    test::run_ok({"qemu-img", "convert", "-W", "-m", "8", "-f", "raw", "-O", "qcow2", "-o",
                  "cluster_size=4096", raw.string(), image.string()});
    const auto map = test::qemu_map(image, "qcow2");
    const auto extents = qemu_host_extents(map);

    const auto r = test::run_cli({"analyze", image.string(), "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    const auto& layer = doc["image"]["layers"][0];
    CHECK(layer["growth_unit"] == 4096);
    const HostLayout want = expected_layout(extents, 4096);
    CHECK(layer["host"]["stored_bytes"] == want.stored_bytes);
    CHECK(layer["host"]["extents"] == want.extents);
    CHECK(layer["host"]["seeks"] == want.seeks);
    CHECK(layer["host"]["backward_seeks"] == want.backward_seeks);
    CHECK(layer["host"]["granules"] == want.granules);
    CHECK(layer["host"]["unplaced_bytes"] == 0);

    // The volume's figures: the same formulas over the volume's bytes only.
    const auto [begin, end] = first_volume(doc);
    const HostLayout vol = expected_layout(clipped(extents, begin, end), 4096);
    const auto& host = doc["volumes"][0]["layers"][0]["host"];
    CHECK(host["stored_bytes"] == vol.stored_bytes);
    CHECK(host["extents"] == vol.extents);
    CHECK(host["seeks"] == vol.seeks);
    CHECK(host["backward_seeks"] == vol.backward_seeks);
    CHECK(host["fragmentation_percent"].get<double>() == Approx(vol.fragmentation_percent));
    fs::remove_all(dir);
}

TEST_CASE("a VHD differencing layer: sector runs in blocks the file holds in reverse, growth by the block",
          "[image][host][vhd]") {
    const fs::path dir = test::scratch_dir() / "host-vhd";
    fs::create_directories(dir);
    test::VhdSpec base;
    base.disk_type = 3;
    base.virtual_size = 8 * M;
    base.unique_id[0] = 0xba;
    test::write_vhd(dir / "base.vhd", base);

    test::VhdSpec child;
    child.virtual_size = 8 * M;
    child.unique_id[0] = 0xc1;
    child.parent_id = base.unique_id;
    child.parent_name = "base.vhd";
    const std::vector<std::byte> sector(512, std::byte{0x42});
    for (std::uint64_t s : {0, 1, 2, 3, 8, 9, 10, 11, 4096, 8192}) child.sectors[s] = sector;
    child.reverse_block_order = true;
    const test::VhdLayout layout = test::write_vhd(dir / "child.vhd", child);

    const auto disk = open_image((dir / "child.vhd").string(), {std::nullopt, {{1, {}, (dir / "base.vhd").string()}}});
    const Layer& layer = disk->layers().front();
    CHECK(layer.granule_size == 512);
    CHECK(layer.growth_unit == 2 * M);
    // Block data follows each block's 512-byte sector bitmap.
    const auto data = [&](std::uint64_t block) { return layout.block_offsets.at(block) + 512; };
    const std::vector<HostExtent> expected = {{0, data(0), 2 * K, 0},
                                              {4 * K, data(0) + 4 * K, 2 * K, 0},
                                              {2 * M, data(1), 512, 0},
                                              {4 * M, data(2), 512, 0}};
    CHECK(layer.host_extents == expected);
    const HostLayout got = analyze_host_layout(layer, 0, disk->size());
    CHECK(got.extents == 4);
    CHECK(got.seeks == 2);  // the 2 KiB skip inside block 0 is read through
    CHECK(got.backward_seeks == 2);
    CHECK(got.granules == 3);
    CHECK(got.fragmentation_percent == Approx(100.0));
    fs::remove_all(dir);
}

TEST_CASE("impact predicts the image file's layout after the plan as qemu lays it out",
          "[impact][host][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    // 48 MiB: on a smaller volume optimize finds no plan that keeps its promise.
    MkImageOptions o;
    o.disk_size = 48ull << 20;
    o.files = 300;
    o.seed = 23;
    const fs::path raw = test::generated_image("host-impact-48", o);
    const fs::path dir = test::scratch_dir() / "host-impact";
    fs::remove_all(dir);  // what a failed run left
    fs::create_directories(dir);
    const fs::path image = dir / "disk.qcow2";
    test::run_ok({"qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw.string(), image.string()});
    const fs::path plan_file = dir / "plan.json";
    REQUIRE(
        test::run_cli({"plan", image.string(), "--strategy", "optimize", "-o", plan_file.string()}).status ==
        0);
    const auto impact = test::run_cli({"impact", image.string(), "--plan", plan_file.string(), "--json"});
    INFO(impact.err);
    REQUIRE(impact.status == 0);
    const Json doc = Json::parse(impact.out);
    const Json& host = doc["figures"]["host"];
    CHECK(host["in_place"] == false);

    // Carry the plan out with qemu itself, move by move in plan order, on a copy: qemu
    // allocates new clusters at the end of the file in the order it is written to.
    const fs::path applied = dir / "applied.qcow2";
    fs::copy_file(image, applied);
    std::ifstream in(plan_file);
    const Json plan = Json::parse(in);
    const Json analysis = Json::parse(test::run_cli({"analyze", image.string(), "--json"}).out);
    const auto [start, end] = first_volume(analysis);
    const std::uint64_t cluster = analysis["volumes"][0]["cluster_size"];
    std::vector<std::string> writes;
    for (const Json& m : plan["moves"])
        writes.push_back("write -P 0x5a " +
                         std::to_string(start + m["to_lcn"].get<std::uint64_t>() * cluster) + " " +
                         std::to_string(m["clusters"].get<std::uint64_t>() * cluster));
    REQUIRE(writes.size() > 10);
    test::qemu_io(applied, "qcow2", writes);

    const HostLayout want =
        expected_layout(clipped(qemu_host_extents(test::qemu_map(applied, "qcow2")), start, end), 64 * K);
    REQUIRE(want.seeks > 0);  // the plan must make a difference worth checking
    // Extents may differ (qemu puts new L2 and refcount clusters among the data, which
    // splits extents by gaps too small to seek); seeks and what is stored may not.
    CHECK(host["after"]["seeks"] == want.seeks);
    CHECK(host["after"]["backward_seeks"] == want.backward_seeks);
    CHECK(host["after"]["stored_bytes"] == want.stored_bytes);
    CHECK(host["after"]["granules"] == want.granules);
    CHECK(host["new_bytes"] == plan["summary"]["thin_growth_bytes"]);
    fs::remove_all(dir);
}
