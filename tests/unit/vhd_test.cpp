// SPDX-License-Identifier: GPL-2.0-or-later
// The VHD reader (core/image/vhd*.cpp). qemu-img is the oracle for fixed and dynamic
// disks: it writes them from a patterned raw file, converts them back to raw and maps
// them. qemu ignores VHD parents, so differencing disks come from the test writer
// (tests/support/vhd_writer) on top of a qemu-made parent, and the expected disk is
// computed here: the parent's bytes with the child's sectors replaced.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/open_chain.hpp"
#include "core/image/vhd.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/vhd_writer.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using Bytes = std::vector<std::byte>;

using guestfrag::test::kind_of;
using guestfrag::test::run_ok;
using guestfrag::test::QemuExtent;
using guestfrag::test::qemu_map;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr std::uint64_t kBlock = 2 * kMiB;

std::byte pattern_at(std::uint64_t offset, std::uint64_t seed) {
    std::uint64_t x = (offset / 8) * 0x9e3779b97f4a7c15ull + seed;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return static_cast<std::byte>((x >> (8 * (offset % 8))) & 0xff);
}

ByteSet::interval_type span(std::uint64_t begin, std::uint64_t end) {
    return ByteSet::interval_type::right_open(begin, end);
}

/// A sparse raw file of `size` bytes with patterned data in `regions` and holes elsewhere.
fs::path patterned_raw(const fs::path& path, std::uint64_t size, const ByteSet& regions, std::uint64_t seed) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
    for (const auto& iv : regions) {
        Bytes buf(iv.upper() - iv.lower());
        for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = pattern_at(iv.lower() + i, seed);
        REQUIRE(::pwrite(fd, buf.data(), buf.size(), static_cast<off_t>(iv.lower())) ==
                static_cast<ssize_t>(buf.size()));
    }
    ::close(fd);
    return path;
}

Bytes slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    Bytes bytes(fs::file_size(path));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

/// The disk as qemu-img sees it (`-f vpc` is needed: qemu does not probe fixed VHDs).
Bytes qemu_raw(const fs::path& image) {
    const fs::path out = image.string() + ".qemu.raw";
    run_ok({"qemu-img", "convert", "-f", "vpc", "-O", "raw", image.string(), out.string()});
    Bytes bytes = slurp(out);
    fs::remove(out);
    return bytes;
}

std::string describe(const ByteSet& set) {
    std::string text;
    for (const auto& iv : set)
        text += "[" + std::to_string(iv.lower()) + "," + std::to_string(iv.upper()) + ") ";
    return text;
}

Bytes read_all(const DiskImage& image) {
    Bytes bytes(image.size());
    // Uneven chunks so reads start and end inside sectors and blocks.
    for (std::uint64_t at = 0; at < bytes.size();) {
        const std::uint64_t n = std::min<std::uint64_t>(bytes.size() - at, 777 * 1024 + 13);
        image.read(at, std::span(bytes).subspan(at, n));
        at += n;
    }
    return bytes;
}

/// Index of the first differing byte, or -1.
std::int64_t first_difference(const Bytes& a, const Bytes& b) {
    if (a.size() != b.size()) return static_cast<std::int64_t>(std::min(a.size(), b.size()));
    const auto [x, y] = std::mismatch(a.begin(), a.end(), b.begin());
    return x == a.end() ? -1 : x - a.begin();
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

/// A 512-byte sector with content derived from `tag` (never all zero, never the filler).
Bytes sector_of(std::uint64_t tag) {
    Bytes s(512);
    for (std::size_t i = 0; i < s.size(); ++i)
        s[i] = static_cast<std::byte>(((tag * 37 + i * 11) % 200) + 20);
    return s;
}

/// Checks layer 0 of `image` against qemu-img map of the same (fixed or dynamic) file.
/// qemu's vpc driver reports a stored block as data and an absent one as "zero, not data"
/// (it has no parents, so absence reads as zero); VHD has no per-block zero state, so our
/// Zero set stays empty and qemu's zero-only ranges are exactly our Unallocated ones.
void check_allocation_against_qemu(const DiskImage& image, const fs::path& file) {
    const Layer& layer = image.layers().at(0);
    ByteSet qemu_data, qemu_zero_only, covered;
    for (const QemuExtent& e : qemu_map(file, "vpc")) {
        REQUIRE(e.depth == 0);  // qemu has no VHD parents
        covered += span(e.start, e.start + e.length);
        CHECK(e.present);
        if (e.data)
            qemu_data += span(e.start, e.start + e.length);
        else if (e.zero)
            qemu_zero_only += span(e.start, e.start + e.length);
    }
    ByteSet all;
    all += span(0, image.size());
    CHECK(covered == all);
    INFO("ours:     " << describe(layer.allocated));
    INFO("qemu-img: " << describe(qemu_data));
    CHECK(layer.allocated == qemu_data);
    CHECK(layer.zero.empty());
    CHECK(qemu_zero_only == all - layer.allocated);
}

/// The file offsets qemu reports for data must be ours too.
void check_file_offsets_against_qemu(const LayerFile& layer, const fs::path& file) {
    for (const QemuExtent& e : qemu_map(file, "vpc")) {
        REQUIRE(e.depth == 0);  // qemu has no VHD parents
        if (!e.data || !e.offset) continue;
        for (std::uint64_t at = e.start; at < e.start + e.length;) {
            const Mapping m = layer.map(at);
            REQUIRE(m.state == Allocation::Data);
            REQUIRE(m.file_offset.has_value());
            CHECK(*m.file_offset == *e.offset + (at - e.start));
            at += std::min(m.length, e.start + e.length - at);
        }
    }
}

void make_vpc(const fs::path& raw, const fs::path& vhd, const std::string& subformat,
              bool preallocate = false) {
    std::vector<std::string> argv{"qemu-img", "convert", "-f", "raw",
                                  "-O",       "vpc",     "-o", "subformat=" + subformat + ",force_size=on"};
    if (preallocate) argv.emplace_back("-S0");
    argv.push_back(raw.string());
    argv.push_back(vhd.string());
    run_ok(argv);
}

void require_qemu() { test::require_tools({"qemu-img"}); }

/// A qemu-made dynamic parent of `size` bytes with data in `regions`.
fs::path qemu_parent(const fs::path& dir, const std::string& name, std::uint64_t size,
                     const ByteSet& regions) {
    const fs::path raw = patterned_raw(dir / (name + ".raw"), size, regions, 7);
    const fs::path vhd = dir / name;
    make_vpc(raw, vhd, "dynamic");
    fs::remove(raw);
    return vhd;
}

test::VhdGuid guid(std::uint8_t tag) {
    test::VhdGuid id{};
    for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::uint8_t>(tag * 16 + i);
    return id;
}

std::string guid_string(const test::VhdGuid& id) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    for (std::size_t i = 0; i < id.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
        text += digits[id[i] >> 4];
        text += digits[id[i] & 0xf];
    }
    return text;
}

/// A differencing child of `parent` in `child_path` with locators and chosen sectors.
test::VhdSpec child_spec(const fs::path& parent, std::uint64_t size) {
    test::VhdSpec spec;
    spec.disk_type = 4;
    spec.virtual_size = size;
    spec.unique_id = guid(0xc);
    spec.parent_id = test::vhd_unique_id(parent);
    spec.parent_name = parent.filename().string();
    return spec;
}

}  // namespace

TEST_CASE("vhd fixed disks read and map like qemu-img", "[image][vhd]") {
    require_qemu();
    const test::WorkDir work("fixed");
    const fs::path& dir = work.path();
    const std::uint64_t size = 9 * kMiB + 3 * 512;
    ByteSet regions;
    regions += span(0, 4096);
    regions += span(3 * kMiB + 100, 3 * kMiB + 70000);
    regions += span(size - 1024, size);
    const fs::path raw = patterned_raw(dir / "src.raw", size, regions, 1);
    const Bytes expected = slurp(raw);

    for (const bool preallocate : {false, true}) {
        DYNAMIC_SECTION("preallocated " << preallocate) {
            const fs::path vhd = dir / (preallocate ? "full.vhd" : "sparse.vhd");
            make_vpc(raw, vhd, "fixed", preallocate);
            const auto image = open_chain(vhd.string());
            CHECK(format_name(image->format()) == "vhd");
            CHECK(image->size() == size);
            const Bytes ours = read_all(*image);
            CHECK(first_difference(ours, qemu_raw(vhd)) == -1);
            CHECK(first_difference(ours, expected) == -1);

            REQUIRE(image->layers().size() == 1);
            const Layer& layer = image->layers()[0];
            CHECK(layer.granule_size == 512);
            CHECK(format_name(layer.format) == "vhd");
            // qemu maps a fixed VHD as data throughout (host holes as "zero and data").
            check_allocation_against_qemu(*image, vhd);

            const auto file = open_vhd(vhd.string());
            CHECK_FALSE(file->parent().has_value());
            CHECK(file->identity() == guid_string(test::vhd_unique_id(vhd)));
            const Mapping m = file->map(12345);
            CHECK(m.state == Allocation::Data);
            CHECK(m.length == size - 12345);
            CHECK(m.file_offset == std::optional<std::uint64_t>(12345));
        }
    }
}

TEST_CASE("vhd fixed disk with an old 511-byte footer", "[image][vhd]") {
    require_qemu();
    const test::WorkDir work("footer511");
    const fs::path& dir = work.path();
    const std::uint64_t size = 2 * kMiB;
    ByteSet regions;
    regions += span(0, size);
    const fs::path raw = patterned_raw(dir / "src.raw", size, regions, 2);
    const fs::path vhd = dir / "old.vhd";
    make_vpc(raw, vhd, "fixed");
    // The last footer byte is reserved (zero): Virtual PC 2004 did not write it.
    fs::resize_file(vhd, fs::file_size(vhd) - 1);
    const auto image = open_chain(vhd.string());
    CHECK(image->size() == size);
    CHECK(first_difference(read_all(*image), slurp(raw)) == -1);
}

TEST_CASE("vhd dynamic disks read and map like qemu-img", "[image][vhd]") {
    require_qemu();
    const test::WorkDir work("dynamic");
    const fs::path& dir = work.path();
    // 6.5 blocks: the last block is only half inside the disk.
    const std::uint64_t size = 13 * kMiB;
    ByteSet regions;
    regions += span(512, 1024);                             // block 0: a few bytes
    regions += span(2 * kBlock, 3 * kBlock);                // block 2: all of it
    regions += span(4 * kBlock - 4096, 4 * kBlock + 8192);  // blocks 3 and 4 around their border
    regions += span(size - 512, size);                      // the disk's last sector (block 6)
    const fs::path raw = patterned_raw(dir / "src.raw", size, regions, 3);
    const fs::path vhd = dir / "dyn.vhd";
    make_vpc(raw, vhd, "dynamic");

    const auto image = open_chain(vhd.string());
    CHECK(image->size() == size);
    const Bytes ours = read_all(*image);
    CHECK(first_difference(ours, qemu_raw(vhd)) == -1);
    CHECK(first_difference(ours, slurp(raw)) == -1);

    REQUIRE(image->layers().size() == 1);
    CHECK(image->layers()[0].granule_size == kBlock);
    check_allocation_against_qemu(*image, vhd);
    ByteSet blocks;  // whole blocks with data, the last one cut at the disk's end
    for (const std::uint64_t b : {0, 2, 3, 4}) blocks += span(b * kBlock, (b + 1) * kBlock);
    blocks += span(6 * kBlock, size);
    CHECK(image->layers()[0].allocated == blocks);

    const auto file = open_vhd(vhd.string());
    check_file_offsets_against_qemu(*file, vhd);
    // Absent blocks coalesce into one run; stored ones stop at their block's end.
    const Mapping hole = file->map(kBlock + 5);
    CHECK(hole.state == Allocation::Unallocated);
    CHECK(hole.length == kBlock - 5);
    CHECK_FALSE(hole.file_offset.has_value());
    const Mapping data = file->map(3 * kBlock + 1000);
    CHECK(data.state == Allocation::Data);
    CHECK(data.length == kBlock - 1000);
    const Mapping last = file->map(size - 512);
    CHECK(last.state == Allocation::Data);
    CHECK(last.length == 512);
}

TEST_CASE("vhd dynamic disks from another writer: small blocks, file order, partial bitmaps",
          "[image][vhd]") {
    require_qemu();
    const test::WorkDir work("dynwriter");
    const fs::path& dir = work.path();
    test::VhdSpec spec;
    spec.disk_type = 3;
    spec.block_size = 64 * 1024;
    spec.virtual_size = 3 * kMiB + 512;
    spec.unique_id = guid(3);
    spec.reverse_block_order = true;
    spec.filler = std::byte{0};  // what a dynamic disk holds in never-written sectors
    for (const std::uint64_t sector : {0, 1, 130, 131, 1000, 6143, 6144})
        spec.sectors[sector] = sector_of(sector);
    spec.extra_blocks = {20};
    const fs::path vhd = dir / "writer.vhd";
    test::write_vhd(vhd, spec);

    const auto image = open_chain(vhd.string());
    CHECK(image->size() == spec.virtual_size);
    CHECK(first_difference(read_all(*image), qemu_raw(vhd)) == -1);
    CHECK(image->layers()[0].granule_size == 64 * 1024);
    check_allocation_against_qemu(*image, vhd);
    check_file_offsets_against_qemu(*open_vhd(vhd.string()), vhd);
}

TEST_CASE("vhd empty dynamic disk of 2 TB maps in one call", "[image][vhd]") {
    require_qemu();
    const test::WorkDir work("big");
    const fs::path& dir = work.path();
    const fs::path vhd = dir / "big.vhd";
    run_ok({"qemu-img", "create", "-q", "-f", "vpc", "-o", "subformat=dynamic,force_size=on", vhd.string(),
            "2000G"});
    const auto file = open_vhd(vhd.string());
    CHECK(file->virtual_size() == 2000ull << 30);
    const Mapping m = file->map(0);
    CHECK(m.state == Allocation::Unallocated);
    CHECK(m.length == file->virtual_size());
    const auto image = open_chain(vhd.string());
    CHECK(image->layers()[0].allocated.empty());
    Bytes buf(4096, std::byte{1});
    image->read(1ull << 40, buf);
    CHECK(std::all_of(buf.begin(), buf.end(), [](std::byte b) { return b == std::byte{0}; }));
}

TEST_CASE("vhd differencing disk over a qemu-made parent", "[image][vhd][chain]") {
    require_qemu();
    const test::WorkDir work("diff");
    const fs::path& dir = work.path();
    const std::uint64_t size = 11 * kMiB;  // 5.5 blocks
    ByteSet parent_regions;
    parent_regions += span(0, kBlock);
    parent_regions += span(3 * kBlock + 4096, 3 * kBlock + 20000);
    const fs::path parent = qemu_parent(dir, "parent.vhd", size, parent_regions);

    test::VhdSpec spec = child_spec(parent, size);
    spec.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\parent.vhd")},
                     {test::kVhdW2ku, test::vhd_utf16le("C:\\VMs\\parent.vhd")}};
    spec.reverse_block_order = true;
    // Sector 0, both sides of the first block border, a run inside a block the parent
    // lacks, a run over the parent's data, and the disk's last sector.
    std::vector<std::uint64_t> sectors{0, 4095, 4096};
    for (std::uint64_t s = 2 * 4096 + 100; s < 2 * 4096 + 120; ++s) sectors.push_back(s);
    for (std::uint64_t s = 3 * 4096 + 9; s < 3 * 4096 + 12; ++s) sectors.push_back(s);
    sectors.push_back(size / 512 - 1);
    for (const std::uint64_t s : sectors) spec.sectors[s] = sector_of(s);
    spec.extra_blocks = {4};  // stored, but its bitmap claims nothing: all parent
    const fs::path child = dir / "child.vhd";
    const test::VhdLayout layout = test::write_vhd(child, spec);

    Bytes expected = qemu_raw(parent);
    ByteSet child_sectors;
    for (const auto& [s, bytes] : spec.sectors) {
        std::copy(bytes.begin(), bytes.end(), expected.begin() + static_cast<std::ptrdiff_t>(s * 512));
        child_sectors += span(s * 512, s * 512 + 512);
    }

    const auto image = open_chain(child.string());
    CHECK(format_name(image->format()) == "vhd");
    CHECK(image->size() == size);
    CHECK(first_difference(read_all(*image), expected) == -1);

    REQUIRE(image->layers().size() == 2);
    const Layer& top = image->layers()[0];
    CHECK(top.path == child.string());
    CHECK(top.granule_size == 512);
    INFO("child: " << describe(top.allocated));
    CHECK(top.allocated == child_sectors);
    CHECK(top.zero.empty());
    const Layer& base = image->layers()[1];
    CHECK(base.depth == 1);
    CHECK(base.path == (dir / "./parent.vhd").lexically_normal().string());
    CHECK(base.granule_size == kBlock);

    const auto file = open_vhd(child.string());
    const auto link = file->parent();
    REQUIRE(link.has_value());
    CHECK(link->recorded == "C:\\VMs\\parent.vhd");
    CHECK(link->expected_identities == std::vector<std::string>{guid_string(test::vhd_unique_id(parent))});
    CHECK(open_vhd(parent.string())->identity() == guid_string(test::vhd_unique_id(parent)));
    CHECK(link->format == ImageFormat::Vhd);
    CHECK(link->recorded_format == "vhd");
    REQUIRE(link->candidates.size() == 1);  // relative and file-name candidates coincide
    CHECK(link->candidates[0] == (dir / "parent.vhd").string());
    CHECK(file->identity() == guid_string(spec.unique_id));

    // Runs: one stored sector, then the rest of block 0 falls to the parent up to the
    // last sector of the block; an unclaimed stored block coalesces with the gap before
    // the next claimed sector.
    const Mapping first = file->map(0);
    CHECK(first.state == Allocation::Data);
    CHECK(first.length == 512);
    CHECK(first.file_offset == std::optional<std::uint64_t>(layout.block_offsets.at(0) + 512));
    const Mapping gap = file->map(512);
    CHECK(gap.state == Allocation::Unallocated);
    CHECK(gap.length == 4094 * 512);
    const Mapping border = file->map(4095 * 512 + 7);
    CHECK(border.state == Allocation::Data);
    CHECK(border.length == 512 - 7);  // data never runs into the next block
    const Mapping spanning = file->map(4097 * 512);
    CHECK(spanning.state == Allocation::Unallocated);
    CHECK(spanning.length == (2 * 4096 + 100 - 4097) * 512);
    const Mapping run = file->map((2 * 4096 + 100) * 512);
    CHECK(run.state == Allocation::Data);
    CHECK(run.length == 20 * 512);
    CHECK(run.file_offset == std::optional<std::uint64_t>(layout.block_offsets.at(2) + 512 + 100 * 512));
    const Mapping through = file->map((3 * 4096 + 12) * 512);  // across the unclaimed block 4
    CHECK(through.state == Allocation::Unallocated);
    CHECK(through.length == (size / 512 - 1 - (3 * 4096 + 12)) * 512);

    SECTION("concurrent readers see the same disk") {
        std::atomic<int> bad{0};
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                std::mt19937_64 rng(t);
                Bytes buf(70000);
                for (int i = 0; i < 200; ++i) {
                    const std::uint64_t at = rng() % (size - buf.size());
                    image->read(at, buf);
                    if (!std::equal(buf.begin(), buf.end(),
                                    expected.begin() + static_cast<std::ptrdiff_t>(at)))
                        ++bad;
                }
            });
        for (auto& t : threads) t.join();
        CHECK(bad == 0);
    }
    SECTION("a grandchild over the child") {
        test::VhdSpec gspec = child_spec(child, size);
        gspec.unique_id = guid(0xd);
        gspec.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\child.vhd")}};
        gspec.sectors[1] = sector_of(1000001);
        gspec.sectors[4096] = sector_of(1000002);
        const fs::path grandchild = dir / "grandchild.vhd";
        test::write_vhd(grandchild, gspec);
        for (const auto& [s, bytes] : gspec.sectors)
            std::copy(bytes.begin(), bytes.end(), expected.begin() + static_cast<std::ptrdiff_t>(s * 512));
        const auto chain = open_chain(grandchild.string());
        REQUIRE(chain->layers().size() == 3);
        CHECK(first_difference(read_all(*chain), expected) == -1);
        ByteSet top_sectors;
        top_sectors += span(512, 1024);
        top_sectors += span(4096 * 512, 4097 * 512);
        CHECK(chain->layers()[0].allocated == top_sectors);
        CHECK(chain->layers()[1].allocated == child_sectors);
    }
}

TEST_CASE("vhd parent locators are tried in Hyper-V's order", "[image][vhd][chain]") {
    require_qemu();
    const test::WorkDir work("locators");
    const fs::path& dir = work.path();
    const std::uint64_t size = 4 * kMiB;
    ByteSet regions;
    regions += span(0, 8192);
    fs::create_directories(dir / "base");
    fs::create_directories(dir / "vm");
    fs::create_directories(dir / "else where");
    const fs::path parent = qemu_parent(dir / "base", "parent.vhd", size, regions);
    const Bytes parent_bytes = qemu_raw(parent);

    test::VhdSpec spec = child_spec(parent, size);
    spec.sectors[3] = sector_of(3);
    Bytes expected = parent_bytes;
    std::copy(spec.sectors[3].begin(), spec.sectors[3].end(), expected.begin() + 3 * 512);
    const fs::path child = dir / "vm" / "child.vhd";
    const auto opens_from = [&](const fs::path& where) {
        const auto image = open_chain(child.string());
        REQUIRE(image->layers().size() == 2);
        CHECK(fs::equivalent(image->layers()[1].path, where));
        CHECK(first_difference(read_all(*image), expected) == -1);
    };

    SECTION("relative path first, against the child's directory") {
        spec.locators = {{test::kVhdW2ku, test::vhd_utf16le("C:\\nowhere\\parent.vhd")},
                         {test::kVhdW2ru, test::vhd_utf16le("..\\base\\parent.vhd")}};
        test::write_vhd(child, spec);
        opens_from(parent);
        const auto link = open_vhd(child.string())->parent();
        CHECK(link->recorded == "C:\\nowhere\\parent.vhd");
        REQUIRE(link->candidates.size() == 2);
        CHECK(link->candidates[0] == (dir / "base" / "parent.vhd").string());
        CHECK(link->candidates[1] == (dir / "vm" / "parent.vhd").string());
    }
    SECTION("absolute host path when the relative one is stale") {
        const fs::path moved = dir / "else where" / "parent.vhd";
        fs::copy_file(parent, moved);
        spec.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\stale\\parent.vhd")},
                         {test::kVhdW2ku, test::vhd_utf16le(moved.string())}};
        test::write_vhd(child, spec);
        opens_from(moved);
        CHECK(open_vhd(child.string())->parent()->recorded == moved.string());
    }
    SECTION("file name of a Windows absolute path, in the child's directory") {
        fs::copy_file(parent, dir / "vm" / "base-disk.vhd");
        spec.locators = {{test::kVhdW2ku, test::vhd_utf16le("D:\\Hyper-V\\base-disk.vhd")}};
        spec.parent_name = "";
        test::write_vhd(child, spec);
        opens_from(dir / "vm" / "base-disk.vhd");
    }
    SECTION("parent unicode name alone") {
        fs::copy_file(parent, dir / "vm" / "named.vhd");
        spec.locators.clear();
        spec.parent_name = "named.vhd";
        test::write_vhd(child, spec);
        opens_from(dir / "vm" / "named.vhd");
        CHECK(open_vhd(child.string())->parent()->recorded == "named.vhd");
    }
    SECTION("MacX file URL") {
        const fs::path moved = dir / "else where" / "parent.vhd";
        fs::copy_file(parent, moved);
        std::string url = "file://localhost" + (dir / "else%20where" / "parent.vhd").string();
        spec.locators = {{test::kVhdMacX, test::vhd_bytes(url)}};
        spec.parent_name = "";
        test::write_vhd(child, spec);
        opens_from(moved);
        CHECK(open_vhd(child.string())->parent()->recorded == moved.string());
    }
    SECTION("deprecated ASCII locators") {
        spec.locators = {{test::kVhdWi2r, test::vhd_bytes("..\\base\\parent.vhd")},
                         {test::kVhdWi2k, test::vhd_bytes("C:\\x\\parent.vhd")}};
        test::write_vhd(child, spec);
        opens_from(parent);
        CHECK(open_vhd(child.string())->parent()->recorded == "C:\\x\\parent.vhd");
    }
    SECTION("--parent overrides every locator") {
        spec.locators = {{test::kVhdW2ku, test::vhd_utf16le("C:\\gone\\gone.vhd")}};
        spec.parent_name = "gone.vhd";
        test::write_vhd(child, spec);
        const auto image = open_chain(child.string(), {{1, {}, parent.string()}});
        CHECK(first_difference(read_all(*image), expected) == -1);
    }
}

TEST_CASE("vhd chains refuse wrong, missing and looping parents", "[image][vhd][chain][bad]") {
    require_qemu();
    const test::WorkDir work("badchain");
    const fs::path& dir = work.path();
    const std::uint64_t size = 4 * kMiB;
    ByteSet regions;
    regions += span(0, 8192);
    const fs::path parent = qemu_parent(dir, "parent.vhd", size, regions);
    std::string message;

    SECTION("parent unique id differs") {
        test::VhdSpec spec = child_spec(parent, size);
        spec.parent_id = guid(9);
        spec.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\parent.vhd")}};
        test::write_vhd(dir / "child.vhd", spec);
        CHECK(kind_of([&] { (void)open_chain((dir / "child.vhd").string()); }, &message) ==
              ErrorKind::Corrupt);
        CHECK(contains(message, guid_string(guid(9))));
        CHECK(contains(message, guid_string(test::vhd_unique_id(parent))));
    }
    SECTION("a parent whose content is not a VHD") {
        run_ok(
            {"qemu-img", "create", "-q", "-f", "vhdx", (dir / "parent.vhdx").string(), std::to_string(size)});
        test::VhdSpec spec = child_spec(parent, size);
        spec.parent_name = "parent.vhdx";
        spec.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\parent.vhdx")}};
        test::write_vhd(dir / "child.vhd", spec);
        CHECK(kind_of([&] { (void)open_chain((dir / "child.vhd").string()); }, &message) ==
              ErrorKind::Corrupt);
        CHECK(message == "parent " + (dir / "parent.vhdx").string() + " of " + (dir / "child.vhd").string() +
                             " is recorded as vhd but its content is vhdx");
    }
    SECTION("missing parent names the recorded path") {
        test::VhdSpec spec = child_spec(parent, size);
        spec.parent_name = "gone.vhd";
        spec.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\gone.vhd")},
                         {test::kVhdW2ku, test::vhd_utf16le("C:\\VMs\\gone.vhd")}};
        test::write_vhd(dir / "orphan.vhd", spec);
        CHECK(kind_of([&] { (void)open_chain((dir / "orphan.vhd").string()); }, &message) ==
              ErrorKind::NotFound);
        CHECK(contains(message, "C:\\VMs\\gone.vhd"));
        CHECK(contains(message, (dir / "gone.vhd").string()));
    }
    SECTION("two children naming each other") {
        test::VhdSpec a = child_spec(parent, size);
        a.unique_id = guid(0xa);
        a.parent_id = guid(0xb);
        a.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\b.vhd")}};
        test::VhdSpec b = a;
        b.unique_id = guid(0xb);
        b.parent_id = guid(0xa);
        b.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\a.vhd")}};
        test::write_vhd(dir / "a.vhd", a);
        test::write_vhd(dir / "b.vhd", b);
        CHECK(kind_of([&] { (void)open_chain((dir / "a.vhd").string()); }, &message) == ErrorKind::Corrupt);
        CHECK(contains(message, "loop"));
    }
    SECTION("a child that is its own parent through a symlink") {
        test::VhdSpec self = child_spec(parent, size);
        self.unique_id = guid(0xe);
        self.parent_id = guid(0xe);
        self.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\link.vhd")}};
        test::write_vhd(dir / "self.vhd", self);
        fs::create_symlink("self.vhd", dir / "link.vhd");
        CHECK(kind_of([&] { (void)open_chain((dir / "self.vhd").string()); }, &message) ==
              ErrorKind::Corrupt);
        CHECK(contains(message, "loop"));
    }
}

TEST_CASE("vhd refuses damaged and unsupported files", "[image][vhd][bad]") {
    require_qemu();
    const test::WorkDir work("bad");
    const fs::path& dir = work.path();
    const std::uint64_t size = 8 * kMiB;
    ByteSet regions;
    regions += span(0, 3 * kBlock);
    const fs::path raw = patterned_raw(dir / "src.raw", size, regions, 5);
    const fs::path pristine = dir / "pristine.vhd";
    make_vpc(raw, pristine, "dynamic");
    const fs::path fixed = dir / "fixed.vhd";
    make_vpc(raw, fixed, "fixed");
    const fs::path vhd = dir / "damaged.vhd";
    fs::copy_file(pristine, vhd);
    const std::uint64_t end = fs::file_size(vhd);
    const std::uint64_t footer = end - 512;
    const std::uint64_t header = 512;  // qemu puts the dynamic header right after the footer copy
    const std::uint64_t bat = 1536;
    std::string message;
    const auto refused = [&](const fs::path& path) {
        const ErrorKind direct = kind_of([&] { (void)open_vhd(path.string()); }, &message);
        const ErrorKind chained = kind_of([&] { (void)open_chain(path.string()); });
        CHECK(direct == chained);
        INFO(message);
        return direct;
    };
    // BAT entry of block 1 as qemu wrote it (blocks 0..2 are stored).
    const Bytes bytes = slurp(pristine);
    std::uint32_t entry1 = 0;
    for (int k = 0; k < 4; ++k) entry1 = (entry1 << 8) | std::to_integer<std::uint32_t>(bytes[bat + 4 + k]);
    REQUIRE(entry1 != 0xffffffffu);

    SECTION("footer checksum") {
        test::patch_be(vhd, footer + 100, 0x55, 1);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "footer checksum"));
    }
    SECTION("dynamic header checksum") {
        test::patch_be(vhd, header + 800, 0x55, 1);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "dynamic disk header checksum"));
    }
    SECTION("BAT entry past the end of the file") {
        test::patch_be(vhd, bat + 4, 0x00ffffff, 4);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "entry 1"));
        CHECK(contains(message, "past the end of the file"));
    }
    SECTION("BAT entry into the footer") {
        test::patch_be(vhd, bat + 4, footer / 512 - 100, 4);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "entry 1"));
    }
    SECTION("overlapping blocks") {
        test::patch_be(vhd, bat + 8, entry1 + 1, 4);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "overlap"));
    }
    SECTION("block over the allocation table") {
        test::patch_be(vhd, bat + 8, bat / 512, 4);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "block allocation table"));
    }
    SECTION("truncated file") {
        // (Cutting one byte would leave a valid 511-byte footer: see the test above.)
        for (const std::uint64_t cut : {end - 2, end - 512, end / 2, std::uint64_t{1000}}) {
            fs::resize_file(vhd, cut);
            CHECK(refused(vhd) == ErrorKind::Corrupt);
            CHECK(contains(message, "truncated"));
        }
    }
    SECTION("fixed disk shorter than its size: read as far as its data goes") {
        fs::copy_file(fixed, vhd, fs::copy_options::overwrite_existing);
        const std::uint64_t fixed_footer = fs::file_size(vhd) - 512;
        test::patch_be(vhd, fixed_footer + 48, size + kMiB, 8);
        test::vhd_fix_checksums(vhd);
        const auto image = open_chain(vhd.string());
        CHECK(image->size() == size + kMiB);
        REQUIRE(image->layers().front().warnings.size() == 1);
        CHECK(contains(image->layers().front().warnings.front(),
                       "the last 1048576 bytes of the disk (from offset " + std::to_string(fixed_footer) +
                           ") are missing"));
        // The fixed disk is allocated whole; its data lies in the file only up to the cut.
        CHECK(image->layers().front().allocated_bytes() == size + kMiB);
        REQUIRE(image->layers().front().host_extents.size() == 1);
        CHECK(image->layers().front().host_extents.front().length == fixed_footer);
        // The bytes present read as the source's; any read that needs a missing byte fails.
        const Bytes source = slurp(raw);
        Bytes present(fixed_footer);
        image->read(0, present);
        CHECK(std::equal(present.begin(), present.end(), source.begin()));
        Bytes straddling(1024);
        CHECK(kind_of([&] { image->read(fixed_footer - 512, straddling); }, &message) == ErrorKind::Corrupt);
        CHECK(contains(message, "truncated"));
        Bytes past(512);
        CHECK(kind_of([&] { image->read(size, past); }) == ErrorKind::Corrupt);
    }
    SECTION("absurd virtual size") {
        test::patch_be(vhd, footer + 48, 1ull << 50, 8);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "64 TiB"));
    }
    SECTION("large virtual size whose table is not in the file") {
        // 32 TiB with a matching table length: 64 MiB of BAT the 8 MiB file cannot hold.
        test::patch_be(vhd, footer + 48, 1ull << 45, 8);
        test::patch_be(vhd, header + 28, (1ull << 45) / kBlock, 4);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "block allocation table"));
    }
    SECTION("table too short for the disk") {
        test::patch_be(vhd, header + 28, 2, 4);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "too few"));
    }
    SECTION("size not a multiple of 512") {
        test::patch_be(vhd, footer + 48, size - 100, 8);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
    }
    SECTION("block size not a power of two") {
        test::patch_be(vhd, header + 32, 3 * kMiB, 4);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "power of two"));
    }
    SECTION("dynamic header past the end") {
        test::patch_be(vhd, footer + 16, end + 4096, 8);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "dynamic disk header"));
    }
    SECTION("deprecated disk type") {
        test::patch_be(vhd, footer + 60, 5, 4);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Unsupported);
        CHECK(message == "vhd: disk type 5 is not supported");
    }
    SECTION("unknown format version") {
        test::patch_be(vhd, footer + 12, 0x00020000, 4);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Unsupported);
        CHECK(message == "vhd: file format version 2.0 is not supported");
    }
    SECTION("parent locator past the end of the file") {
        const fs::path parent = dir / "pristine.vhd";
        test::VhdSpec spec = child_spec(parent, size);
        spec.locators = {{test::kVhdW2ru, test::vhd_utf16le(".\\pristine.vhd")}};
        const test::VhdLayout layout = test::write_vhd(vhd, spec);
        test::patch_be(vhd, layout.header_offset + 576 + 16, 1ull << 40, 8);
        test::vhd_fix_checksums(vhd);
        CHECK(refused(vhd) == ErrorKind::Corrupt);
        CHECK(contains(message, "locator 0"));
    }
    SECTION("the pristine file still opens") { CHECK_NOTHROW(open_chain(pristine.string())); }
}
