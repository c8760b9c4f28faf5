// SPDX-License-Identifier: GPL-2.0-or-later
// The VHDX reader against independent oracles: qemu-img for what qemu reads (fixed and
// dynamic disks made by Hyper-V and by qemu, logs replayed by `qemu-img check -r all`),
// and for differencing disks, which qemu refuses, children written by the test writer
// (tests/support/vhdx_writer) over qemu-made parents with expected bytes computed here.
//
// qemu 7.2's vhdx driver has no block-status callback, so `qemu-img map` reports every
// VHDX as one data extent. Allocation is therefore checked against what qemu is known to
// do when it writes (a written block becomes FULLY_PRESENT as a whole; untouched blocks
// keep the state qemu-img create gave them: ZERO with block_state_zero=on, else
// NOT_PRESENT), and the file offsets map() reports are checked against the host file's
// bytes. Should qemu ever report real allocation, the exact comparison below takes over.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/image/open_chain.hpp"
#include "core/image/vhdx.hpp"
#include "core/image/vhdx_format.hpp"
#include "core/image/vhdx_layer.hpp"
#include "support/declared_zero.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/vhdx_writer.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using test::VhdxState;

using guestfrag::test::kind_of;
using guestfrag::test::run_ok;
using guestfrag::test::QemuExtent;
using guestfrag::test::qemu_map;
using guestfrag::test::qemu_io;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

void require_qemu() { test::require_tools({"qemu-img", "qemu-io"}); }

/// A fresh directory for one test case (test cases run as parallel processes).
fs::path work_dir(const std::string& name) {
    const fs::path dir = test::scratch_dir() / ("vhdx-" + name + "." + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

/// Removes a test case's directory when the case ends (images are tens of MiB each).
struct Cleanup {
    fs::path dir;
    explicit Cleanup(fs::path d) : dir(std::move(d)) {}
    Cleanup(const Cleanup&) = delete;
    Cleanup& operator=(const Cleanup&) = delete;
    ~Cleanup() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Deterministic bytes that differ per offset and seed.
std::vector<std::byte> pattern(std::uint64_t offset, std::size_t length, std::uint64_t seed) {
    std::vector<std::byte> out(length);
    for (std::size_t i = 0; i < length; ++i) {
        const std::uint64_t at = offset + i;
        out[i] = static_cast<std::byte>(mix(seed * 1000003 + at / 8) >> (8 * (at % 8)));
    }
    return out;
}

void write_file(const fs::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

void patch(const fs::path& path, std::uint64_t offset, std::span<const std::byte> bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(f.good());
}

void patch_le(const fs::path& path, std::uint64_t offset, std::uint64_t value, unsigned n) {
    std::vector<std::byte> bytes(n);
    for (unsigned i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(value >> (8 * i));
    patch(path, offset, bytes);
}

std::uint64_t read_le(const std::vector<std::byte>& bytes, std::uint64_t offset, unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = n; i-- > 0;) v = (v << 8) | std::to_integer<std::uint64_t>(bytes[offset + i]);
    return v;
}

/// Rewrites a checksummed structure of `length` bytes at `offset` and fixes its CRC-32C
/// (field at byte 4), as a writer that produced these values would have.
template <typename F>
void rewrite_checksummed(const fs::path& path, std::uint64_t offset, std::size_t length, F&& edit) {
    auto bytes = test::file_bytes(path);
    std::vector<std::byte> block(bytes.begin() + static_cast<std::ptrdiff_t>(offset),
                                 bytes.begin() + static_cast<std::ptrdiff_t>(offset + length));
    edit(block);
    const std::uint32_t crc = test::vhdx_test_crc(block, 4);
    for (unsigned i = 0; i < 4; ++i) block[4 + i] = static_cast<std::byte>(crc >> (8 * i));
    patch(path, offset, block);
}

std::string describe(const ByteSet& set) {
    std::string text;
    std::size_t n = 0;
    for (const auto& iv : set) {
        if (++n > 40) return text + "...";
        text += "[" + std::to_string(iv.lower()) + "," + std::to_string(iv.upper()) + ") ";
    }
    return text.empty() ? "(empty)" : text;
}

ByteSet::interval_type range(std::uint64_t start, std::uint64_t end) {
    return ByteSet::interval_type::right_open(start, end);
}

/// `qemu-img convert -O raw` of `path`, as bytes.
std::vector<std::byte> qemu_raw(const fs::path& path) {
    const fs::path raw = path.string() + ".qemu.raw";
    run_ok({"qemu-img", "convert", "-O", "raw", path.string(), raw.string()});
    auto bytes = test::file_bytes(raw);
    fs::remove(raw);
    return bytes;
}

/// Every byte of `image` equals `expected` (reads in odd-sized chunks so they cross block,
/// run and sector boundaries).
void check_bytes(const DiskImage& image, const std::vector<std::byte>& expected) {
    REQUIRE(expected.size() == image.size());
    const std::size_t chunk = 3 * MiB + 4097;
    std::vector<std::byte> ours(chunk);
    for (std::uint64_t offset = 0; offset < image.size();) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, image.size() - offset));
        image.read(offset, std::span(ours).first(n));
        if (std::memcmp(ours.data(), expected.data() + offset, n) != 0) {
            std::size_t i = 0;
            while (ours[i] == expected[offset + i]) ++i;
            FAIL("first difference at byte " << offset + i);
        }
        offset += n;
    }
}

/// The top layer against `qemu-img map`. Without block status (qemu 7.2) qemu reports the
/// whole disk as one data extent at depth 0 with no offset: then only "everything is
/// present" can be compared. Otherwise its data/zero extents must equal ours exactly.
void check_qemu_map(const DiskImage& image, const fs::path& path) {
    const auto extents = qemu_map(path);
    const bool no_block_status = std::all_of(extents.begin(), extents.end(), [](const QemuExtent& e) {
        return e.depth == 0 && e.present && e.data && !e.zero && !e.offset;
    });
    if (no_block_status) {
        ByteSet covered;
        for (const auto& e : extents) covered += range(e.start, e.start + e.length);
        CHECK(covered == ByteSet(range(0, image.size())));
        return;
    }
    ByteSet data, zero;
    for (const auto& e : extents) {
        if (e.depth != 0) continue;
        if (e.data) data += range(e.start, e.start + e.length);
        else if (e.zero && e.present) zero += range(e.start, e.start + e.length);
    }
    CHECK(image.layers()[0].allocated == data);
    CHECK(test::declared_zero(image)[0] == zero);
}

/// Every Data run of `layer` maps to host bytes equal to the disk's bytes there.
void check_file_offsets(const LayerFile& layer, const std::vector<std::byte>& disk, const fs::path& path) {
    const auto file = test::file_bytes(path);
    for (std::uint64_t at = 0; at < layer.virtual_size();) {
        const Mapping m = layer.map(at);
        REQUIRE(m.length > 0);
        if (m.state == Allocation::Data) {
            REQUIRE(m.file_offset);
            REQUIRE(*m.file_offset + m.length <= file.size());
            CHECK(std::memcmp(file.data() + *m.file_offset, disk.data() + at, m.length) == 0);
        } else {
            CHECK(!m.file_offset);
        }
        at += m.length;
    }
}

/// The layer at `depth` stores `data` and its file declares `zero`.
void check_layer(const DiskImage& image, std::size_t depth, const ByteSet& data, const ByteSet& zero) {
    const Layer& layer = image.layers().at(depth);
    const ByteSet declared = test::declared_zero(image).at(depth);
    INFO("layer " << layer.depth << " " << layer.path);
    INFO("ours data:     " << describe(layer.allocated));
    INFO("expected data: " << describe(data));
    INFO("ours zero:     " << describe(declared));
    INFO("expected zero: " << describe(zero));
    CHECK(layer.allocated == data);
    CHECK(declared == zero);
}

/// The blocks (of `block_size`) that [start, start + length) touches, as a byte set capped
/// at `disk_size`.
ByteSet blocks_of(std::uint64_t start, std::uint64_t length, std::uint64_t block_size, std::uint64_t disk_size) {
    const std::uint64_t first = start / block_size * block_size;
    const std::uint64_t last = std::min(disk_size, (start + length + block_size - 1) / block_size * block_size);
    return ByteSet(range(first, last));
}

/// A qemu-io write, remembered for the expected allocation.
struct QemuWrite {
    std::uint64_t offset, length;
    int pattern;
};

const std::vector<QemuWrite> kQemuWrites = {
    {0, 4 * KiB, 0xab},
    {3 * MiB + 512, 70 * KiB, 0x5a},
    {17 * MiB, MiB, 0x11},
    {33 * MiB - 512, 1024, 0x42},  // crosses a 1 MiB block boundary
};
constexpr std::uint64_t kQemuDiskSize = 40 * MiB + 3 * 512;

std::vector<std::string> qemu_write_commands(const std::vector<QemuWrite>& writes) {
    std::vector<std::string> commands;
    for (const auto& w : writes)
        commands.push_back("write -P " + std::to_string(w.pattern) + " " + std::to_string(w.offset) + " " +
                           std::to_string(w.length));
    return commands;
}

/// The small Hyper-V differencing sample's recorded parent.
constexpr const char* kSampleParent =
    "C:\\Users\\Public\\Documents\\Hyper-V\\Virtual hard disks\\Generation 1_49C4BAF3-4B25-4406-8C4B-D39E65C32385.avhdx";

}  // namespace

TEST_CASE("vhdx: CRC-32C and GUID text", "[vhdx]") {
    CHECK(vhdx::crc32c(std::as_bytes(std::span("123456789", 9))) == 0xE3069283u);
    const auto guid = vhdx::Guid::parse("{FF34003B-11ED-4CF8-A166-B2BE05E20B80}");
    REQUIRE(guid);
    CHECK(guid->text() == "ff34003b-11ed-4cf8-a166-b2be05e20b80");
    CHECK(guid->bytes[0] == std::byte{0x3b});  // Data1 little-endian
    CHECK(guid->bytes[8] == std::byte{0xa1});  // Data4 as written
    CHECK(vhdx::guids::kBatRegion.text() == "2dc27766-f623-4200-9d64-115e9bfd4a08");
    CHECK(!vhdx::Guid::parse("ff34003b-11ed-4cf8-a166-b2be05e20b8"));
    CHECK(!vhdx::Guid::parse("ff34003b-11ed-4cf8-a166+b2be05e20b80"));
}

TEST_CASE("vhdx: Hyper-V fixed and dynamic samples read like qemu-img", "[vhdx]") {
    require_qemu();
    for (const char* name : {"hyperv-dynamic.vhdx.gz", "hyperv-fixed.vhdx.gz"}) {
        INFO(name);
        const fs::path path = test::testdata(name);
        const auto image = open_chain(path.string());
        REQUIRE(format_name(image->format()) == "vhdx");
        REQUIRE(image->layers().size() == 1);
        const auto expected = qemu_raw(path);
        check_bytes(*image, expected);
        check_qemu_map(*image, path);
        // Hyper-V stores both samples' only blocks fully present (Data everywhere).
        check_layer(*image, 0, ByteSet(range(0, 10 * MiB)), ByteSet());
        const VhdxLayer layer(path.string());
        check_file_offsets(layer, expected, path);
        CHECK(layer.identity() == test::vhdx_data_write_guid(path));
        CHECK(layer.granule_size() == (std::string(name).find("dynamic") != std::string::npos ? 32 * MiB : 2 * MiB));
        CHECK(!layer.parent());
        CHECK(layer.replayed_log_entries() == 0);
    }
}

TEST_CASE("vhdx: the Hyper-V differencing sample names its missing parent", "[vhdx]") {
    const fs::path path = test::testdata("hyperv-differencing.avhdx.gz");
    std::string message;
    CHECK(kind_of([&] { (void)open_chain(path.string()); }, &message) == ErrorKind::NotFound);
    INFO(message);
    CHECK(message.find(kSampleParent) != std::string::npos);

    const VhdxLayer layer(path.string());
    CHECK(layer.virtual_size() == 8 * (MiB * 1024));
    CHECK(layer.granule_size() == 512);
    const auto link = layer.parent();
    REQUIRE(link);
    CHECK(link->recorded == kSampleParent);
    // Hyper-V writes a nil parent_linkage2, which names no parent.
    CHECK(link->expected_identities == std::vector<std::string>{"ff34003b-11ed-4cf8-a166-b2be05e20b80"});
    CHECK(link->format == ImageFormat::Vhdx);
    REQUIRE(!link->candidates.empty());
    CHECK(link->candidates.front() ==
          (path.parent_path() / "Generation 1_49C4BAF3-4B25-4406-8C4B-D39E65C32385.avhdx").string());

    // Independently of the reader: every sector bit set in the file's sector bitmap blocks
    // (the sample has only partially present blocks) is one 512-byte sector of the layer.
    const auto file = test::file_bytes(path);
    const std::uint64_t table = 192 * KiB;
    std::uint64_t bat = 0, bat_length = 0;
    for (std::uint64_t i = 0; i < read_le(file, table + 8, 4); ++i)
        if (read_le(file, table + 16 + 32 * i, 4) == 0x2DC27766) {
            bat = read_le(file, table + 32 + 32 * i, 8);
            bat_length = read_le(file, table + 40 + 32 * i, 4);
        }
    REQUIRE(bat != 0);
    std::uint64_t bits = 0, fully_present = 0;
    for (std::uint64_t i = 0; i < bat_length / 8; ++i) {
        const std::uint64_t e = read_le(file, bat + 8 * i, 8);
        if ((i + 1) % 2049 == 0 && (e & 7) == 6)  // sector bitmap entries (chunk ratio 2048)
            for (std::uint64_t b = 0; b < MiB; ++b)
                bits += static_cast<std::uint64_t>(std::popcount(std::to_integer<unsigned>(file[(e >> 20 << 20) + b])));
        else if ((e & 7) == 6)
            ++fully_present;
    }
    REQUIRE(fully_present == 0);
    REQUIRE(bits > 0);

    // A stand-in parent with the expected DataWriteGuid lets the chain open (--parent).
    const fs::path dir = work_dir("sample-parent");
    const Cleanup cleanup{dir};
    test::VhdxSpec spec;
    spec.virtual_size = layer.virtual_size();
    spec.block_size = 32 * MiB;
    spec.data_write_guid = "ff34003b-11ed-4cf8-a166-b2be05e20b80";
    test::VhdxWriter parent(spec);
    parent.write(0, pattern(0, 64 * KiB, 9));
    parent.save(dir / "parent.vhdx");
    const auto image = open_chain(path.string(), {{1, {}, (dir / "parent.vhdx").string()}});
    REQUIRE(image->layers().size() == 2);
    CHECK(image->layers()[0].allocated_bytes() == bits * 512);
    CHECK(image->layers()[0].zero.empty());
    // Allocated sectors read the child's stored bytes; the rest the parent's.
    std::vector<std::byte> got(64 * KiB);
    image->read(0, got);
    const auto parent_bytes = pattern(0, 64 * KiB, 9);
    CHECK(std::memcmp(got.data(), parent_bytes.data(), got.size()) == 0);
    // Each stored run reads the file's bytes at the offset map() gives.
    const auto stored = test::file_bytes(path);
    std::uint64_t runs = 0;
    for (std::uint64_t at = 0; at < layer.virtual_size();) {
        const Mapping m = layer.map(at);
        if (m.state == Allocation::Data) {
            ++runs;
            REQUIRE(m.file_offset);
            std::vector<std::byte> bytes(m.length);
            image->read(at, bytes);
            CHECK(std::memcmp(bytes.data(), stored.data() + *m.file_offset, bytes.size()) == 0);
        }
        at += m.length;
    }
    CHECK(runs > 10);
}

TEST_CASE("vhdx: qemu-made dynamic and fixed disks read like qemu-img", "[vhdx]") {
    require_qemu();
    const fs::path dir = work_dir("qemu");
    const Cleanup cleanup{dir};
    struct Case {
        std::string options;
        std::uint64_t block;
        bool fixed;
    };
    // Untouched blocks are ZERO with block_state_zero=on (qemu's default), NOT_PRESENT
    // otherwise; in a disk without a parent both read as zeros and neither is declared zero.
    const Case cases[] = {
        {"block_size=1M", MiB, false},
        {"block_size=1M,block_state_zero=off", MiB, false},
        {"block_size=8M,log_size=2M", 8 * MiB, false},
        {"block_size=32M,block_state_zero=off,log_size=4M", 32 * MiB, false},
        // qemu's fixed subformat preallocates the file but, with block_state_zero=on,
        // leaves the BAT entries ZERO until a block is written.
        {"subformat=fixed,block_size=8M", 8 * MiB, false},
        {"subformat=fixed,block_size=1M,block_state_zero=off", MiB, true},
    };
    int n = 0;
    for (const Case& c : cases) {
        INFO(c.options);
        const fs::path path = dir / ("disk" + std::to_string(n++) + ".vhdx");
        run_ok({"qemu-img", "create", "-q", "-f", "vhdx", "-o", c.options, path.string(), std::to_string(kQemuDiskSize)});
        qemu_io(path, "vhdx", qemu_write_commands(kQemuWrites));
        const auto image = open_chain(path.string());
        REQUIRE(image->size() == kQemuDiskSize);
        const auto expected = qemu_raw(path);
        check_bytes(*image, expected);
        check_qemu_map(*image, path);

        ByteSet data;
        if (c.fixed) data += range(0, kQemuDiskSize);
        for (const auto& w : kQemuWrites) data += blocks_of(w.offset, w.length, c.block, kQemuDiskSize);
        check_layer(*image, 0, data, ByteSet());
        CHECK(image->layers()[0].granule_size == c.block);
        const VhdxLayer layer(path.string());
        check_file_offsets(layer, expected, path);
        CHECK(layer.identity() == test::vhdx_data_write_guid(path));
    }

    // qemu-img convert from a raw file (it writes every block, zeros included).
    const fs::path raw = dir / "source.raw";
    {
        std::vector<std::byte> source(12 * MiB + 512);
        for (const auto& [at, len] : {std::pair{0ul, 300 * KiB}, {5 * MiB + 4096, 2 * MiB}, {12 * MiB - 4096, 4608ul}}) {
            const auto p = pattern(at, len, 77);
            std::memcpy(source.data() + at, p.data(), len);
        }
        write_file(raw, source);
    }
    for (const char* options : {"subformat=dynamic,block_size=2M", "subformat=fixed,block_size=4M"}) {
        INFO(options);
        const fs::path path = dir / "converted.vhdx";
        fs::remove(path);
        run_ok({"qemu-img", "convert", "-f", "raw", "-O", "vhdx", "-o", options, raw.string(), path.string()});
        const auto image = open_chain(path.string());
        const auto expected = qemu_raw(path);
        CHECK(expected == test::file_bytes(raw));
        check_bytes(*image, expected);
        check_file_offsets(VhdxLayer(path.string()), expected, path);
    }
}

namespace {

/// A differencing child written over a qemu-made parent, with the bytes and allocation
/// the chain must show, computed here.
struct DiffFixture {
    fs::path dir, parent, child;
    std::vector<std::byte> expected;
    ByteSet child_data, child_zero, parent_data;
    std::uint64_t size = 24 * MiB;
};

test::VhdxSpec child_spec(std::uint64_t size, const std::string& linkage, const std::string& relative,
                          const std::string& absolute) {
    test::VhdxSpec spec;
    spec.virtual_size = size;
    spec.block_size = 2 * MiB;
    spec.has_parent = true;
    spec.data_write_guid = "c41dc41d-0001-4000-8000-00000000c41d";
    spec.parent_locator = {
        {"parent_linkage", "{" + linkage + "}"},
        {"parent_linkage2", "{00000000-0000-0000-0000-000000000000}"},
        {"relative_path", relative},
        {"volume_path", "\\\\?\\Volume{0eba351e-5634-46d6-a8cf-4ddc2d6ac0b9}\\VMs\\base.vhdx"},
        {"absolute_win32_path", absolute},
    };
    return spec;
}

DiffFixture make_diff_fixture(const std::string& name) {
    DiffFixture f;
    f.dir = work_dir(name);
    f.parent = f.dir / "base.vhdx";
    f.child = f.dir / "child.avhdx";
    run_ok({"qemu-img", "create", "-q", "-f", "vhdx", "-o", "block_size=1M", f.parent.string(), std::to_string(f.size)});
    const std::vector<QemuWrite> parent_writes = {
        {0, 3 * MiB, 0x21}, {5 * MiB, 512 * KiB, 0x22}, {12 * MiB + 4 * KiB, 8 * KiB, 0x23}, {20 * MiB, 4 * MiB, 0x24}};
    qemu_io(f.parent, "vhdx", qemu_write_commands(parent_writes));
    for (const auto& w : parent_writes) f.parent_data += blocks_of(w.offset, w.length, MiB, f.size);
    f.expected = qemu_raw(f.parent);

    test::VhdxWriter w(child_spec(f.size, test::vhdx_data_write_guid(f.parent), ".\\base.vhdx", "C:\\VMs\\base.vhdx"));
    std::uint64_t seed = 100;
    const auto put = [&](std::uint64_t offset, std::uint64_t length) {
        const auto bytes = pattern(offset, length, ++seed);
        w.write(offset, bytes);
        std::memcpy(f.expected.data() + offset, bytes.data(), length);
        f.child_data += range(offset, offset + length);
    };
    const auto block = [](std::uint64_t b) { return b * 2 * MiB; };
    // Block 0: partially present, two runs of sectors.
    put(3 * 512, 512);
    put(64 * KiB, 4 * KiB);
    // Block 1: fully present; what was not written reads zero, hiding the parent.
    put(block(1) + MiB, 8 * KiB);
    w.set_state(1, VhdxState::FullyPresent);
    std::memset(f.expected.data() + block(1), 0, MiB);
    std::memset(f.expected.data() + block(1) + MiB + 8 * KiB, 0, MiB - 8 * KiB);
    f.child_data += range(block(1), block(2));
    // Block 2: ZERO hides the parent's data at 5 MiB.
    w.set_state(2, VhdxState::Zero);
    std::memset(f.expected.data() + block(2), 0, 2 * MiB);
    f.child_zero += range(block(2), block(3));
    // Blocks 3 and 4: undefined and unmapped: the parent shows through.
    w.set_state(3, VhdxState::Undefined);
    w.set_state(4, VhdxState::Unmapped);
    // Block 5's last sector and fully present block 6 lie back to back in the file: one run.
    put(block(6) - 512, 512);
    put(block(6), 4 * KiB);
    w.set_state(6, VhdxState::FullyPresent);
    std::memset(f.expected.data() + block(6) + 4 * KiB, 0, 2 * MiB - 4 * KiB);
    f.child_data += range(block(6), block(7));
    // Block 7: every other sector.
    for (std::uint64_t s = 0; s < 64; s += 2) put(block(7) + s * 512, 512);
    // The disk's last sector.
    put(f.size - 512, 512);
    w.save(f.child);
    return f;
}

}  // namespace

TEST_CASE("vhdx: differencing child over a qemu-made parent", "[vhdx]") {
    require_qemu();
    const DiffFixture f = make_diff_fixture("diff");
    const Cleanup cleanup{f.dir};
    const auto image = open_chain(f.child.string());
    REQUIRE(format_name(image->format()) == "vhdx");
    REQUIRE(image->layers().size() == 2);
    CHECK(image->layers()[1].path == f.parent.string());
    check_bytes(*image, f.expected);
    check_layer(*image, 0, f.child_data, f.child_zero);
    check_layer(*image, 1, f.parent_data, ByteSet());
    CHECK(image->layers()[0].granule_size == 512);

    const VhdxLayer child(f.child.string());
    check_file_offsets(child, f.expected, f.child);
    const auto link = child.parent();
    REQUIRE(link);
    CHECK(link->recorded == "C:\\VMs\\base.vhdx");
    CHECK(link->expected_identities == std::vector<std::string>{test::vhdx_data_write_guid(f.parent)});
    CHECK(link->format == ImageFormat::Vhdx);
    CHECK(link->recorded_format == "vhdx");
    // The relative path and both recorded file names lead to the same file: listed once.
    REQUIRE(link->candidates.size() == 1);
    CHECK(link->candidates[0] == f.parent.string());
    // Coalescing: block 5's last sector, all of block 6 and block 7's first sector.
    const Mapping m = child.map(12 * MiB - 512);
    CHECK(m.state == Allocation::Data);
    CHECK(m.length == 512 + 2 * MiB + 512);
    // Sequential map() over the 24 MiB disk takes one call per run.
    std::size_t calls = 0;
    for (std::uint64_t at = 0; at < child.virtual_size(); ++calls) at += child.map(at).length;
    CHECK(calls < 90);

    SECTION("reads from several threads agree") {
        std::vector<std::thread> threads;
        std::atomic<int> mismatches{0};
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                std::mt19937_64 rng(static_cast<std::uint64_t>(t));
                std::vector<std::byte> buf(300 * KiB);
                for (int i = 0; i < 200; ++i) {
                    const std::uint64_t len = rng() % buf.size() + 1;
                    const std::uint64_t at = rng() % (f.size - len);
                    image->read(at, std::span(buf).first(len));
                    if (std::memcmp(buf.data(), f.expected.data() + at, len) != 0) ++mismatches;
                }
            });
        for (auto& th : threads) th.join();
        CHECK(mismatches == 0);
    }
}

TEST_CASE("vhdx: parent resolution, missing parents, identity and loops", "[vhdx]") {
    require_qemu();
    const DiffFixture f = make_diff_fixture("parents");
    const Cleanup cleanup{f.dir};
    const std::string guid = test::vhdx_data_write_guid(f.parent);

    SECTION("a stale relative path falls back to the absolute path's file name beside the child") {
        test::VhdxWriter w(child_spec(f.size, guid, "..\\elsewhere\\base.vhdx", "C:\\VMs\\base.vhdx"));
        w.write(0, pattern(0, 4096, 5));
        const fs::path child = f.dir / "moved.avhdx";
        w.save(child);
        const auto link = VhdxLayer(child.string()).parent();
        REQUIRE(link);
        REQUIRE(link->candidates.size() == 2);
        CHECK(link->candidates[0] == (f.dir.parent_path() / "elsewhere" / "base.vhdx").string());
        CHECK(link->candidates[1] == f.parent.string());
        const auto image = open_chain(child.string());
        CHECK(image->layers().size() == 2);
    }
    SECTION("a missing parent is named as recorded") {
        test::VhdxWriter w(child_spec(f.size, guid, ".\\gone.vhdx", "C:\\VMs\\gone.vhdx"));
        const fs::path child = f.dir / "orphan.avhdx";
        w.save(child);
        std::string message;
        CHECK(kind_of([&] { (void)open_chain(child.string()); }, &message) == ErrorKind::NotFound);
        CHECK(message.find("C:\\VMs\\gone.vhdx") != std::string::npos);
        // --parent supplies it.
        CHECK(open_chain(child.string(), {{1, {}, f.parent.string()}})->layers().size() == 2);
    }
    SECTION("a parent with another DataWriteGuid is refused") {
        test::VhdxWriter w(child_spec(f.size, "01234567-89ab-cdef-0123-456789abcdef", ".\\base.vhdx", "C:\\VMs\\base.vhdx"));
        const fs::path child = f.dir / "stranger.avhdx";
        w.save(child);
        std::string message;
        CHECK(kind_of([&] { (void)open_chain(child.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("01234567-89ab-cdef-0123-456789abcdef") != std::string::npos);
    }
    // child_spec's locator with parent_linkage2 set to `linkage2`.
    const auto with_linkage2 = [&](const std::string& linkage, const std::string& linkage2) {
        auto spec = child_spec(f.size, linkage, ".\\base.vhdx", "C:\\VMs\\base.vhdx");
        const auto entry = std::find_if(spec.parent_locator.begin(), spec.parent_locator.end(),
                                        [](const auto& kv) { return kv.first == "parent_linkage2"; });
        REQUIRE(entry != spec.parent_locator.end());
        entry->second = linkage2;
        return spec;
    };
    SECTION("a parent whose DataWriteGuid is parent_linkage2 is the parent") {
        test::VhdxWriter w(with_linkage2("01234567-89ab-cdef-0123-456789abcdef", "{" + guid + "}"));
        w.write(0, pattern(0, 4096, 6));
        const fs::path child = f.dir / "linkage2.avhdx";
        w.save(child);
        const auto link = VhdxLayer(child.string()).parent();
        REQUIRE(link);
        CHECK(link->expected_identities ==
              std::vector<std::string>{"01234567-89ab-cdef-0123-456789abcdef", guid});
        const auto image = open_chain(child.string());
        REQUIRE(image->layers().size() == 2);
        CHECK(image->layers()[1].path == f.parent.string());
        std::vector<std::byte> bytes(8192);
        image->read(0, bytes);
        CHECK(std::memcmp(bytes.data(), pattern(0, 4096, 6).data(), 4096) == 0);
        CHECK(std::memcmp(bytes.data() + 4096, f.expected.data() + 4096, 4096) == 0);
    }
    SECTION("a parent matching neither linkage is refused, naming both") {
        test::VhdxWriter w(
            with_linkage2("01234567-89ab-cdef-0123-456789abcdef", "{76543210-ba98-fedc-3210-fedcba987654}"));
        const fs::path child = f.dir / "neither.avhdx";
        w.save(child);
        std::string message;
        CHECK(kind_of([&] { (void)open_chain(child.string()); }, &message) == ErrorKind::Corrupt);
        INFO(message);
        CHECK(message.find("expected id 01234567-89ab-cdef-0123-456789abcdef or "
                           "76543210-ba98-fedc-3210-fedcba987654, found " +
                           guid + ")") != std::string::npos);
    }
    SECTION("a parent_linkage2 that is not a GUID is corrupt") {
        test::VhdxWriter w(with_linkage2(guid, "{not-a-guid}"));
        const fs::path child = f.dir / "bad-linkage2.avhdx";
        w.save(child);
        std::string message;
        CHECK(kind_of([&] { (void)VhdxLayer(child.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("parent_linkage2 \"{not-a-guid}\" is not a GUID") != std::string::npos);
    }
    SECTION("children naming each other form a loop") {
        auto a = child_spec(f.size, "bbbbbbbb-0000-4000-8000-00000000000b", ".\\b.avhdx", "C:\\VMs\\b.avhdx");
        a.data_write_guid = "aaaaaaaa-0000-4000-8000-00000000000a";
        auto b = child_spec(f.size, "aaaaaaaa-0000-4000-8000-00000000000a", ".\\a.avhdx", "C:\\VMs\\a.avhdx");
        b.data_write_guid = "bbbbbbbb-0000-4000-8000-00000000000b";
        test::VhdxWriter(a).save(f.dir / "a.avhdx");
        test::VhdxWriter(b).save(f.dir / "b.avhdx");
        std::string message;
        CHECK(kind_of([&] { (void)open_chain((f.dir / "a.avhdx").string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("loop") != std::string::npos);
    }
}

TEST_CASE("vhdx: 4 KiB logical sectors", "[vhdx]") {
    require_qemu();
    const fs::path dir = work_dir("4k");
    const Cleanup cleanup{dir};
    const std::uint64_t size = 9 * MiB;
    test::VhdxSpec base;
    base.virtual_size = size;
    base.block_size = MiB;
    base.logical_sector_size = 4096;
    base.data_write_guid = "4b4b4b4b-0000-4000-8000-000000000001";
    test::VhdxWriter parent(base);
    std::vector<std::byte> expected(size);
    ByteSet parent_data;
    for (const auto& [at, len] : {std::pair{0ul, 64 * KiB}, {3 * MiB + 8 * KiB, MiB}, {size - 4 * KiB, 4 * KiB}}) {
        const auto p = pattern(at, len, 3);
        parent.write(at, p);
        std::memcpy(expected.data() + at, p.data(), len);
        parent_data += blocks_of(at, len, MiB, size);
    }
    parent.save(dir / "base4k.vhdx");
    // qemu 7.2 refuses logical sectors other than 512 bytes, so the bytes are checked
    // against what was written only.

    auto spec = child_spec(size, base.data_write_guid, "base4k.vhdx", "C:\\VMs\\base4k.vhdx");
    spec.logical_sector_size = 4096;
    spec.block_size = MiB;
    test::VhdxWriter child(spec);
    ByteSet child_data;
    for (const auto& [at, len] : {std::pair{4096ul, 8 * KiB}, {3 * MiB + 512 * KiB, 4 * KiB}, {size - 8 * KiB, 4 * KiB}}) {
        const auto p = pattern(at, len, 4);
        child.write(at, p);
        std::memcpy(expected.data() + at, p.data(), len);
        child_data += range(at, at + len);
    }
    child.save(dir / "child4k.avhdx");
    const auto image = open_chain((dir / "child4k.avhdx").string());
    REQUIRE(image->layers().size() == 2);
    CHECK(image->layers()[0].granule_size == 4096);
    check_bytes(*image, expected);
    check_layer(*image, 0, child_data, ByteSet());
    check_layer(*image, 1, parent_data, ByteSet());
}

namespace {

/// The log entry with the highest sequence number in a VHDX's log region (qemu leaves its
/// applied entries there), as (log GUID bytes, sequence).
std::vector<std::byte> newest_log_guid(const std::vector<std::byte>& file, std::uint64_t log_offset,
                                       std::uint64_t log_length) {
    std::vector<std::byte> guid;
    std::uint64_t best = 0;
    for (std::uint64_t at = log_offset; at < log_offset + log_length; at += 4096)
        if (std::memcmp(file.data() + at, "loge", 4) == 0 && read_le(file, at + 16, 8) > best) {
            best = read_le(file, at + 16, 8);
            guid.assign(file.begin() + static_cast<std::ptrdiff_t>(at + 32), file.begin() + static_cast<std::ptrdiff_t>(at + 48));
        }
    return guid;
}

/// `qemu-img check -r all` on a copy (qemu replays the log only when it may write), then
/// its raw conversion.
std::vector<std::byte> qemu_replayed_raw(const fs::path& path) {
    const fs::path copy = path.string() + ".replayed.vhdx";
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    const auto r = test::run({"qemu-img", "check", "-r", "all", copy.string()});
    INFO(r.out << r.err);
    CHECK(r.status != 2);  // 0 or 1 (repaired); 2 = check failed
    auto bytes = qemu_raw(copy);
    fs::remove(copy);
    return bytes;
}

}  // namespace

TEST_CASE("vhdx: the log is replayed in memory", "[vhdx]") {
    require_qemu();
    const fs::path dir = work_dir("log");
    const Cleanup cleanup{dir};

    SECTION("a log qemu wrote, re-armed over a stale BAT") {
        const fs::path path = dir / "qemu.vhdx";
        run_ok({"qemu-img", "create", "-q", "-f", "vhdx", "-o", "block_size=1M", path.string(), "20M"});
        const auto before = test::file_bytes(path);
        qemu_io(path, "vhdx", {"write -P 0xab 0 4k", "write -P 0xcd 5M 1M"});
        const auto written = qemu_raw(path);
        CHECK(VhdxLayer(path.string()).replayed_log_entries() == 0);  // qemu closed it cleanly

        // qemu applies each log entry and clears the header's log GUID; naming the newest
        // entry's GUID again and putting back the BAT as it was before the writes leaves a
        // file whose current BAT is only in the log.
        const auto file = test::file_bytes(path);
        const std::uint64_t log_offset = read_le(file, 64 * KiB + 72, 8);
        const std::uint64_t log_length = read_le(file, 64 * KiB + 68, 4);
        const auto guid = newest_log_guid(file, log_offset, log_length);
        REQUIRE(guid.size() == 16);
        for (const std::uint64_t header : {64 * KiB, 128 * KiB})
            rewrite_checksummed(path, header, 4096, [&](std::vector<std::byte>& h) {
                std::copy(guid.begin(), guid.end(), h.begin() + 48);
            });
        std::uint64_t bat = 0;
        for (std::uint64_t i = 0; i < read_le(file, 192 * KiB + 8, 4); ++i)
            if (read_le(file, 192 * KiB + 16 + 32 * i, 4) == 0x2DC27766) bat = read_le(file, 192 * KiB + 32 + 32 * i, 8);
        REQUIRE(bat != 0);
        patch(path, bat, std::span(before).subspan(bat, 4096));

        const VhdxLayer layer(path.string());
        CHECK(layer.replayed_log_entries() >= 1);
        const auto image = open_chain(path.string());
        check_bytes(*image, written);
        check_bytes(*image, qemu_replayed_raw(path));
        check_layer(*image, 0, ByteSet(range(0, MiB)) + range(5 * MiB, 6 * MiB), ByteSet());
    }

    SECTION("a log with data, zero descriptors and a damaged entry") {
        test::VhdxSpec spec;
        spec.virtual_size = 16 * MiB;
        spec.block_size = MiB;
        test::VhdxWriter w(spec);
        std::vector<std::byte> expected(spec.virtual_size);
        for (const auto& [at, len] : {std::pair{0ul, 64 * KiB}, {3 * MiB, 12 * KiB}}) {
            const auto p = pattern(at, len, 11);
            w.write(at, p);
            std::memcpy(expected.data() + at, p.data(), len);
        }
        const fs::path clean = dir / "clean.vhdx";
        const test::VhdxLayout layout = w.save(clean);
        const auto good = test::file_bytes(clean);
        const auto sector = [&](std::uint64_t offset) {
            return std::vector<std::byte>(good.begin() + static_cast<std::ptrdiff_t>(offset),
                                          good.begin() + static_cast<std::ptrdiff_t>(offset + 4096));
        };
        const std::uint64_t block3 = layout.block_offsets.at(3);
        const std::uint64_t block0 = layout.block_offsets.at(0);
        // Entry 1 carries the BAT and block 3's first sector; entry 2 zeroes the second
        // 4 KiB of block 0.
        w.spec().log = {
            test::VhdxLogEntry{{}, {{layout.bat_offset, sector(layout.bat_offset)}, {block3, sector(block3)}}},
            test::VhdxLogEntry{{{block0 + 4096, 4096}}, {}},
        };
        const fs::path path = dir / "logged.vhdx";
        REQUIRE(w.save(path).file_size == layout.file_size);
        // What the file holds outside the log is stale: no BAT entries, garbage in block 3.
        patch(path, layout.bat_offset, std::vector<std::byte>(4096));
        patch(path, block3, std::vector<std::byte>(4096, std::byte{0x99}));

        auto replayed = expected;
        std::memset(replayed.data() + 4096, 0, 4096);
        const VhdxLayer layer(path.string());
        CHECK(layer.replayed_log_entries() == 2);
        const auto image = open_chain(path.string());
        check_bytes(*image, replayed);
        check_bytes(*image, qemu_replayed_raw(path));

        // A damaged checksum drops entry 2; entry 1 alone is still a complete sequence.
        const std::uint64_t entry2 = layout.log_offset + 3 * 4096;  // entry 1: 1 descriptor + 2 data sectors
        REQUIRE(std::memcmp(test::file_bytes(path).data() + entry2, "loge", 4) == 0);
        patch_le(path, entry2 + 100, 0x5555, 2);
        CHECK(VhdxLayer(path.string()).replayed_log_entries() == 1);
        const auto partial = open_chain(path.string());
        check_bytes(*partial, expected);
        check_bytes(*partial, qemu_replayed_raw(path));
    }
}

TEST_CASE("vhdx: damaged and unsupported images fail with clear errors", "[vhdx]") {
    const fs::path dir = work_dir("bad");
    const Cleanup cleanup{dir};
    test::VhdxSpec spec;
    spec.virtual_size = 8 * MiB;
    spec.block_size = MiB;
    test::VhdxWriter w(spec);
    w.write(0, pattern(0, 64 * KiB, 1));
    w.write(5 * MiB, pattern(5 * MiB, 64 * KiB, 1));
    const fs::path good = dir / "good.vhdx";
    const test::VhdxLayout layout = w.save(good);
    REQUIRE(VhdxLayer(good.string()).virtual_size() == spec.virtual_size);
    const std::uint64_t items = layout.metadata_offset + 64 * KiB;  // file parameters, then virtual size

    const auto damaged = [&](const std::string& name) {
        const fs::path path = dir / (name + ".vhdx");
        fs::copy_file(good, path, fs::copy_options::overwrite_existing);
        return path;
    };
    const auto expect = [&](const fs::path& path, ErrorKind kind, const std::string& text) {
        std::string message;
        CHECK(kind_of([&] { (void)open_chain(path.string()); }, &message) == kind);
        INFO(message);
        CHECK(message.find(text) != std::string::npos);
        CHECK(message.find('\n') == std::string::npos);
    };

    SECTION("headers") {
        auto path = damaged("one-header");
        patch_le(path, 128 * KiB + 200, 0xdead, 2);  // the current one (higher sequence number)
        CHECK(open_chain(path.string())->size() == spec.virtual_size);  // the older one serves
        patch_le(path, 64 * KiB + 200, 0xdead, 2);
        expect(path, ErrorKind::Corrupt, "neither header");

        path = damaged("version");
        for (const std::uint64_t h : {64 * KiB, 128 * KiB})
            rewrite_checksummed(path, h, 4096, [](std::vector<std::byte>& b) { b[66] = std::byte{2}; });
        expect(path, ErrorKind::Unsupported, "header version 2");

        path = damaged("region-tables");
        patch_le(path, 192 * KiB + 500, 1, 1);
        CHECK(open_chain(path.string())->size() == spec.virtual_size);  // the copy serves
        patch_le(path, 256 * KiB + 500, 1, 1);
        expect(path, ErrorKind::Corrupt, "region table");

        path = damaged("not-vhdx");
        patch(path, 0, std::as_bytes(std::span("vhdxfilf", 8)));
        CHECK(kind_of([&] { (void)open_vhdx(path.string()); }) == ErrorKind::Corrupt);
    }
    SECTION("truncated files") {
        for (const std::uint64_t size : {layout.file_size - MiB / 2, 4 * MiB, 300 * KiB, 100 * KiB, 10ul}) {
            INFO("truncated to " << size);
            const auto path = damaged("truncated");
            fs::resize_file(path, size);
            std::string message;
            CHECK(kind_of([&] { (void)open_vhdx(path.string()); }, &message) == ErrorKind::Corrupt);
            INFO(message);
            CHECK(!message.empty());
        }
    }
    SECTION("BAT entries") {
        auto path = damaged("past-eof");
        patch_le(path, layout.bat_offset + 8 * w.payload_index(5), 6 | (std::uint64_t{4096} << 20), 8);
        expect(path, ErrorKind::Corrupt, "BAT entry 5 (block 5) at offset 4294967296 points past the end of the file");

        path = damaged("state");
        patch_le(path, layout.bat_offset, 4, 1);
        expect(path, ErrorKind::Corrupt, "invalid state 4");

        path = damaged("overlap");
        patch_le(path, layout.bat_offset + 8 * w.payload_index(5), 6 | layout.block_offsets.at(0), 8);
        expect(path, ErrorKind::Corrupt, "overlaps");

        path = damaged("into-bat");
        patch_le(path, layout.bat_offset + 8 * w.payload_index(5), 6 | layout.bat_offset, 8);
        expect(path, ErrorKind::Corrupt, "BAT entry 5 (block 5) overlaps the BAT region");

        path = damaged("partial-without-parent");
        patch_le(path, layout.bat_offset, 7 | layout.block_offsets.at(0), 8);
        expect(path, ErrorKind::Corrupt, "without a parent");
    }
    SECTION("metadata") {
        auto path = damaged("block-size");
        patch_le(path, items, 3 * MiB, 4);
        expect(path, ErrorKind::Corrupt, "block size 3145728 is not a power of two");
        patch_le(path, items, 512 * MiB, 4);
        expect(path, ErrorKind::Corrupt, "block size");

        path = damaged("huge");
        patch_le(path, items + 8, std::uint64_t{1} << 60, 8);
        expect(path, ErrorKind::Corrupt, "64 TiB");

        path = damaged("sector-size");
        patch_le(path, items + 16, 1024, 4);
        expect(path, ErrorKind::Corrupt, "logical sector size 1024");

        test::VhdxSpec extra = spec;
        extra.extra_metadata = {{"12345678-9abc-4def-8123-456789abcdef", std::vector<std::byte>(8), false}};
        test::VhdxWriter(extra).save(dir / "optional-item.vhdx");
        CHECK(open_chain((dir / "optional-item.vhdx").string())->size() == spec.virtual_size);
        extra.extra_metadata[0].required = true;
        test::VhdxWriter(extra).save(dir / "required-item.vhdx");
        expect(dir / "required-item.vhdx", ErrorKind::Unsupported,
               "required metadata item {12345678-9abc-4def-8123-456789abcdef} is not supported");

        test::VhdxSpec region = spec;
        region.extra_regions = {{"87654321-9abc-4def-8123-456789abcdef", {}, false}};
        test::VhdxWriter(region).save(dir / "optional-region.vhdx");
        CHECK(open_chain((dir / "optional-region.vhdx").string())->size() == spec.virtual_size);
        region.extra_regions[0].required = true;
        test::VhdxWriter(region).save(dir / "required-region.vhdx");
        expect(dir / "required-region.vhdx", ErrorKind::Unsupported, "required region {87654321-9abc-4def-8123-456789abcdef}");
    }
    SECTION("parent locator") {
        auto child = child_spec(spec.virtual_size, "01234567-89ab-cdef-0123-456789abcdef", "p.vhdx", "C:\\p.vhdx");
        child.locator_type = "11111111-2222-4333-8444-555555555555";
        test::VhdxWriter(child).save(dir / "locator-type.avhdx");
        expect(dir / "locator-type.avhdx", ErrorKind::Unsupported, "parent locator type");

        child = child_spec(spec.virtual_size, "x", "p.vhdx", "C:\\p.vhdx");
        child.parent_locator.erase(child.parent_locator.begin());
        test::VhdxWriter(child).save(dir / "no-linkage.avhdx");
        expect(dir / "no-linkage.avhdx", ErrorKind::Corrupt, "parent_linkage");

        // A partially present block whose chunk has no sector bitmap.
        child = child_spec(spec.virtual_size, "01234567-89ab-cdef-0123-456789abcdef", "p.vhdx", "C:\\p.vhdx");
        test::VhdxWriter cw(child);
        cw.write(0, pattern(0, 4096, 1));
        const auto child_layout = cw.save(dir / "no-bitmap.avhdx");
        patch_le(dir / "no-bitmap.avhdx", child_layout.bat_offset + 8 * cw.bitmap_index(0), 0, 8);
        expect(dir / "no-bitmap.avhdx", ErrorKind::Corrupt, "has no sector bitmap");
    }
    SECTION("log") {
        auto path = damaged("log-past-eof");
        for (const std::uint64_t h : {64 * KiB, 128 * KiB})
            rewrite_checksummed(path, h, 4096, [](std::vector<std::byte>& b) {
                b[48] = std::byte{1};                         // a log GUID
                b[72 + 5] = std::byte{1};                     // log offset 1 TiB
            });
        expect(path, ErrorKind::Corrupt, "the log at offset 1099512676352 (1048576 bytes) lies past the end");
    }
}
