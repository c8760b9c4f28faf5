// SPDX-License-Identifier: GPL-2.0-or-later
// The VHDX reader's memory on huge disks that store nothing (docs/design.md "Limits on
// hostile sizes"): the BAT is read in slices and only its ZERO entries and those of stored
// blocks are kept, a run of them as one, so what `guestfrag analyze` adds over its own
// footprint does not grow with the virtual size. Also the mapping of stored blocks in and
// out of file order, which those runs describe.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/image/open_image.hpp"
#include "core/image/vhdx_layer.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using guestfrag::test::run_ok;

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t TiB = std::uint64_t{1} << 40;

/// The bound on what the CLI may add over its own footprint on a hostile file, as in
/// image_memory_test.cpp.
constexpr long kInputRssKib = 256 * 1024;

/// `qemu-img create -f vhdx` of `size` bytes with 1 MiB blocks and `options` added.
fs::path qemu_vhdx(const fs::path& dir, const std::string& name, std::uint64_t size,
                   const std::string& options) {
    const fs::path path = dir / name;
    run_ok({"qemu-img", "create", "-q", "-f", "vhdx", "-o", "block_size=1M,subformat=dynamic" + options,
            path.string(), std::to_string(size)});
    return path;
}

/// `guestfrag analyze` of a disk with no partition table: refused, adding at most
/// `bound_kib` to the CLI's footprint.
void check_cli_finds_nothing(const fs::path& path, long bound_kib = kInputRssKib) {
    const auto r = test::run_cli_measured({"analyze", path.string()});
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("no partition table and no NTFS file system found") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.peak_rss_kib > 0);
    CHECK(r.input_rss_kib <= bound_kib);
}

std::vector<std::byte> read_file_at(const fs::path& path, std::uint64_t offset, std::size_t length) {
    std::vector<std::byte> bytes(length);
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
    REQUIRE(in.gcount() == static_cast<std::streamsize>(length));
    return bytes;
}

/// The VHDX at `path` (no parent) stores nothing: ZERO blocks read as NOT_PRESENT ones do
/// and are held as them, so the whole disk is one unallocated run and no zero is kept.
void check_stores_nothing(const fs::path& path, std::uint64_t size) {
    const auto disk = open_image(path.string());
    CHECK(disk->size() == size);
    REQUIRE(disk->layers().size() == 1);
    CHECK(disk->layers().front().allocated_bytes() == 0);
    CHECK(disk->layers().front().zero.empty());
    const VhdxLayer layer(path.string());
    CHECK(layer.map(0).state == Allocation::Unallocated);
    CHECK(layer.map(0).length == size);
}

/// The little-endian unsigned integer in `bytes` at `at`.
template <typename T>
T load_le(const std::vector<std::byte>& bytes, std::size_t at) {
    T value = 0;
    for (std::size_t i = sizeof(T); i-- > 0;) value = static_cast<T>(value << 8 | std::to_integer<T>(bytes.at(at + i)));
    return value;
}

}  // namespace

TEST_CASE("vhdx: a 64 TiB dynamic disk whose BAT is all NOT_PRESENT costs what it stores",
          "[hostile][memory][vhdx]") {
    test::require_tools({"qemu-img"});
    test::WorkDir dir("memory_vhdx_not_present");
    // With block_state_zero=off qemu-img leaves the BAT (64 Mi payload entries, 512 MiB)
    // a hole: 200 KiB on the host. Held whole with 9 bytes per block, it took 1.1 GB.
    const fs::path path = qemu_vhdx(dir, "empty.vhdx", 64 * TiB, ",block_state_zero=off");
    {
        const auto disk = open_image(path.string());
        CHECK(disk->size() == 64 * TiB);
        REQUIRE(disk->layers().size() == 1);
        CHECK(disk->layers().front().allocated_bytes() == 0);
        CHECK(boost::icl::length(disk->layers().front().zero) == 0);
    }
    check_cli_finds_nothing(path);
}

TEST_CASE("vhdx: a 7 TiB dynamic disk whose BAT is all ZERO costs what it stores",
          "[hostile][memory][vhdx]") {
    test::require_tools({"qemu-img"});
    test::WorkDir dir("memory_vhdx_zero");
    // qemu-img's default (block_state_zero=on) writes every payload entry out as ZERO: a
    // 56 MiB BAT, which the reader once held whole with 9 bytes per block (130 MB peak).
    // Runs of one state are held as one, so it now costs as little as the hole above: a
    // bound below the BAT's own size, which the hostile-input bound is not at this size.
    const fs::path path = qemu_vhdx(dir, "zero.vhdx", 7 * TiB, "");
    check_stores_nothing(path, 7 * TiB);
    check_cli_finds_nothing(path, 32 * 1024);
}

TEST_CASE("vhdx: a 7 TiB dynamic disk whose BAT alternates ZERO and NOT_PRESENT costs what its BAT holds",
          "[hostile][memory][vhdx]") {
    test::require_tools({"qemu-img"});
    test::WorkDir dir("memory_vhdx_striped");
    const fs::path path = qemu_vhdx(dir, "striped.vhdx", 7 * TiB, "");
    // Every other payload entry of qemu's all-ZERO BAT made NOT_PRESENT (0): 3.7 million
    // one-block runs of ZERO, which the image once held twice over as one set node each
    // (524 MB), and the reader as 16 bytes each. The BAT region is found through the region
    // table at 192 KiB (VHDX 1.0 section 2.3); a chunk of 4096 payload entries (1 MiB
    // blocks, 512-byte sectors) is followed by one sector bitmap entry.
    const auto table = read_file_at(path, 192 * 1024, 64 * 1024);
    constexpr std::array<std::uint8_t, 16> kBatGuid{0x66, 0x77, 0xc2, 0x2d, 0x23, 0xf6, 0x00, 0x42,
                                                    0x9d, 0x64, 0x11, 0x5e, 0x9b, 0xfd, 0x4a, 0x08};
    std::uint64_t bat_offset = 0;
    std::uint32_t bat_length = 0;
    const auto count = load_le<std::uint32_t>(table, 8);
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::size_t entry = 16 + std::size_t{32} * i;
        if (std::memcmp(table.data() + entry, kBatGuid.data(), kBatGuid.size()) != 0) continue;
        bat_offset = load_le<std::uint64_t>(table, entry + 16);
        bat_length = load_le<std::uint32_t>(table, entry + 24);
    }
    REQUIRE(bat_offset != 0);
    auto bat = read_file_at(path, bat_offset, bat_length);
    const std::uint64_t blocks = 7 * TiB / MiB;
    const std::uint64_t entries = blocks + (blocks - 1) / 4096;  // up to the last payload entry
    REQUIRE(bat.size() >= 8 * entries);
    for (std::uint64_t j = 0, payload = 0; j < entries; ++j)
        if (j % 4097 != 4096 && payload++ % 2 == 1)
            std::fill_n(bat.begin() + static_cast<std::ptrdiff_t>(8 * j), 8, std::byte{0});
    {
        std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
        out.seekp(static_cast<std::streamoff>(bat_offset));
        out.write(reinterpret_cast<const char*>(bat.data()), static_cast<std::streamsize>(bat.size()));
        REQUIRE(out.good());
    }
    check_stores_nothing(path, 7 * TiB);
    check_cli_finds_nothing(path, 32 * 1024);
}

TEST_CASE("vhdx: stored blocks map to their own file offsets, in and out of file order", "[vhdx]") {
    test::require_tools({"qemu-img", "qemu-io"});
    test::WorkDir dir("vhdx_runs");
    const fs::path path = qemu_vhdx(dir, "disk.vhdx", 64 * MiB, "");
    // qemu allocates blocks at the end of the file in write order: blocks 3-5 follow each
    // other in the file, 10 lies before 9, 20 and 31-32 are written in part.
    test::qemu_io(path, "vhdx",
                  {"write -P 0x11 3M 3M", "write -P 0x22 10M 4K", "write -P 0x33 9M 512",
                   "write -P 0x44 20M 64K", "write -P 0x55 31M 1536K"});

    const VhdxLayer layer(path.string());
    std::vector<std::pair<std::uint64_t, std::uint64_t>> data;  // virtual [start, end)
    for (std::uint64_t offset = 0; offset < layer.virtual_size();) {
        const Mapping m = layer.map(offset);
        REQUIRE(m.length > 0);
        if (m.state == Allocation::Data) {
            // The file holds at file_offset what the disk holds at offset.
            REQUIRE(m.file_offset.has_value());
            std::vector<std::byte> disk(static_cast<std::size_t>(m.length));
            layer.read(offset, disk);
            CHECK((disk == read_file_at(path, *m.file_offset, disk.size())));
            if (!data.empty() && data.back().second == offset)
                data.back().second += m.length;
            else
                data.emplace_back(offset, offset + m.length);
        } else {
            // Untouched blocks are ZERO (qemu's default), which without a parent read as
            // NOT_PRESENT ones do.
            CHECK(m.state == Allocation::Unallocated);
        }
        offset += m.length;
    }
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected{
        {3 * MiB, 6 * MiB}, {9 * MiB, 11 * MiB}, {20 * MiB, 21 * MiB}, {31 * MiB, 33 * MiB}};
    CHECK(data == expected);

    // The bytes read through the map equal what qemu reads.
    const fs::path raw = dir / "disk.raw";
    run_ok({"qemu-img", "convert", "-O", "raw", path.string(), raw.string()});
    const auto disk = open_image(path.string());
    for (const auto& [start, end] : expected) {
        std::vector<std::byte> bytes(static_cast<std::size_t>(end - start));
        disk->read(start, bytes);
        CHECK((bytes == read_file_at(raw, start, bytes.size())));
    }
}
