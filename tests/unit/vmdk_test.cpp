// SPDX-License-Identifier: GPL-2.0-or-later
// The VMDK reader against qemu as the oracle. qemu-img writes the hosted sparse, stream-
// optimized and flat variants and backing chains; COWD (vmfsSparse), seSparse and
// streamed stream-optimized files come from our test writer (tests/support/vmdk_writer),
// and qemu-img reads those too, so each one is checked against qemu's reading of the very
// same files: bytes against `qemu-img convert -O raw`, every layer's allocation against
// `qemu-img map --output=json`. Damaged files are made by patching bytes.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/image/open_chain.hpp"
#include "core/image/vmdk.hpp"
#include "core/image/vmdk_descriptor.hpp"
#include "core/image/vmdk_grain_extent.hpp"
#include "core/image/vmdk_layer.hpp"
#include "support/declared_zero.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/vmdk_writer.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;

using guestfrag::test::kind_of;
using guestfrag::test::run_ok;
using guestfrag::test::QemuExtent;
using guestfrag::test::qemu_map;
using guestfrag::test::qemu_io;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t GiB = 1024 * MiB;

void require_qemu() { test::require_tools({"qemu-img", "qemu-io"}); }

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

enum class Fill { Random, Text, Zeros };
struct Region {
    std::uint64_t offset, length;
    Fill fill;
};

/// A sparse raw file with deterministic content in `regions` and holes elsewhere. Random
/// data does not compress, text does; explicit zeros are stored on the host.
void make_raw(const fs::path& path, std::uint64_t size, const std::vector<Region>& regions, std::uint64_t seed = 1) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
    for (const Region& r : regions) {
        std::vector<char> bytes(r.length);
        for (std::uint64_t i = 0; i < r.length; ++i) {
            const std::uint64_t at = r.offset + i;
            switch (r.fill) {
                case Fill::Random: bytes[i] = static_cast<char>(mix(seed * 1000003 + at / 8) >> (8 * (at % 8))); break;
                case Fill::Text: {
                    const std::string line = "guestfrag vmdk line " + std::to_string((at / 64) % 997 + seed) + "\n";
                    bytes[i] = line[at % line.size()];
                    break;
                }
                case Fill::Zeros: bytes[i] = 0; break;
            }
        }
        REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(r.offset)) ==
                static_cast<ssize_t>(bytes.size()));
    }
    ::close(fd);
}

/// The standard source disk: not a multiple of the 64 KiB grain, data at odd offsets, a
/// tail in the last partial grain, explicit zeros (qemu-img convert leaves those out).
constexpr std::uint64_t kDiskSize = 24 * MiB + 9 * 512;
const std::vector<Region> kLayout = {
    {0, 64 * KiB, Fill::Text},
    {100 * KiB, 200 * KiB, Fill::Random},
    {1 * MiB, 4 * KiB, Fill::Random},
    {3 * MiB, 2 * MiB, Fill::Text},
    {5 * MiB + 12345, 7655, Fill::Random},
    {8 * MiB, 64 * KiB, Fill::Zeros},
    {10 * MiB, 8 * MiB, Fill::Random},
    {kDiskSize - 5000, 5000, Fill::Text},
};

fs::path standard_raw(const fs::path& dir) {
    const fs::path raw = dir / "source.raw";
    if (!fs::exists(raw)) make_raw(raw, kDiskSize, kLayout);
    return raw;
}

/// A second layer's worth of changes on a disk of kDiskSize (for delta extents).
fs::path delta_raw(const fs::path& dir) {
    const fs::path raw = dir / "delta.raw";
    if (!fs::exists(raw))
        make_raw(raw, kDiskSize,
                 {{512, 1024, Fill::Random},
                  {1 * MiB + 2048, 4 * KiB, Fill::Text},
                  {3 * MiB + 64 * KiB, 300 * KiB, Fill::Random},
                  {9 * MiB, 32 * KiB, Fill::Zeros},
                  {16 * MiB - 4096, 8192, Fill::Random},
                  {20 * MiB, 3 * MiB, Fill::Text},
                  {kDiskSize - 512, 512, Fill::Random}},
                 7);
    return raw;
}

fs::path convert(const fs::path& raw, const fs::path& out, const std::string& subformat,
                 const std::vector<std::string>& options = {}) {
    std::string o = "subformat=" + subformat;
    for (const auto& option : options) o += "," + option;
    run_ok({"qemu-img", "convert", "-f", "raw", "-O", "vmdk", "-o", o, raw.string(), out.string()});
    return out;
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

/// Every byte of `image` equals `qemu-img convert -O raw` of `path` (reads in odd-sized
/// chunks so they cross grain, run and extent boundaries). Disks above 256 MiB are
/// compared where either side stores or declares anything, plus sampled windows
/// elsewhere, so that multi-GiB sparse disks stay quick.
void check_bytes(const DiskImage& image, const fs::path& path) {
    const fs::path raw = path.string() + ".qemu.raw";
    run_ok({"qemu-img", "convert", "-O", "raw", path.string(), raw.string()});
    REQUIRE(fs::file_size(raw) == image.size());
    ByteSet ranges;
    if (image.size() <= 256 * MiB) {
        ranges += ByteSet::interval_type::right_open(0, image.size());
    } else {
        const auto widen = [&](std::uint64_t lower, std::uint64_t upper) {
            ranges += ByteSet::interval_type::right_open(lower > MiB ? lower - MiB : 0,
                                                         std::min(image.size(), upper + MiB));
        };
        for (const Layer& layer : image.layers())
            for (const auto& iv : layer.allocated) widen(iv.lower(), iv.upper());
        for (const ByteSet& zero : test::declared_zero(image))
            for (const auto& iv : zero) widen(iv.lower(), iv.upper());
        for (const QemuExtent& e : qemu_map(path))
            if (e.present && !(e.data && e.zero)) widen(e.start, e.start + e.length);  // not host holes
        for (std::uint64_t i = 0; i < 16; ++i) {
            const std::uint64_t at = mix(i) % (image.size() - MiB);
            widen(at, at + MiB);
        }
    }
    const int fd = ::open(raw.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    const std::size_t chunk = 3 * MiB + 4097;
    std::vector<std::byte> ours(chunk);
    std::vector<std::byte> theirs(chunk);
    for (const auto& iv : ranges)
        for (std::uint64_t offset = iv.lower(); offset < iv.upper();) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, iv.upper() - offset));
            image.read(offset, std::span(ours).first(n));
            REQUIRE(::pread(fd, theirs.data(), n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n));
            if (std::memcmp(ours.data(), theirs.data(), n) != 0) {
                std::size_t i = 0;
                while (ours[i] == theirs[i]) ++i;
                ::close(fd);
                FAIL("first difference from qemu-img at byte " << offset + i);
            }
            offset += n;
        }
    ::close(fd);
    fs::remove(raw);
}

/// Each layer's allocation equals qemu-img map at its depth. qemu reports a range only at
/// the topmost layer that has it, so ours is compared after removing what layers above
/// already cover. What qemu's vmdk driver reports:
///  - data:true, zero:false — stored in that layer;
///  - data:true, zero:true — a flat extent (or stored grain) over a hole of the host file:
///    qemu asks the host file and adds "zero"; ours maps host holes of flat extents as
///    not stored (as raw layers do), so these are neither data nor zero for us;
///  - zero:true, data:false, present:true — declared zero in that layer (zeroed grains,
///    seSparse zero/unmapped grains);
///  - present:false — in no layer.
void check_allocation(const DiskImage& image, const fs::path& path) {
    const auto& layers = image.layers();
    std::vector<ByteSet> data(layers.size()), zero(layers.size());
    for (const QemuExtent& e : qemu_map(path)) {
        REQUIRE(e.depth < layers.size());
        const auto range = ByteSet::interval_type::right_open(e.start, e.start + e.length);
        if (e.data && !e.zero) data[e.depth] += range;
        else if (e.zero && !e.data && e.present) zero[e.depth] += range;
    }
    const std::vector<ByteSet> declared = test::declared_zero(image);
    ByteSet above;
    for (std::size_t d = 0; d < layers.size(); ++d) {
        const Layer& layer = layers[d];
        INFO("depth " << d << " (" << format_name(layer.format) << ", " << layer.path << ")");
        for (const ByteSet* set : {&layer.allocated, &declared[d]})
            for (const auto& iv : *set) {
                CHECK(iv.lower() % layer.granule_size == 0);
                CHECK((iv.upper() % layer.granule_size == 0 || iv.upper() == image.size()));
            }
        const ByteSet ours_data = layer.allocated - above;
        const ByteSet ours_zero = declared[d] - above;
        INFO("ours data:  " << describe(ours_data));
        INFO("qemu data:  " << describe(data[d]));
        INFO("ours zero:  " << describe(ours_zero));
        INFO("qemu zero:  " << describe(zero[d]));
        CHECK(ours_data == data[d]);
        CHECK(ours_zero == zero[d]);
        above += layer.allocated;
        above += declared[d];
    }
}

/// Where qemu reports a host offset for top-layer data, our map() reports the same (an
/// offset in the extent's own file, for both).
void check_file_offsets(const LayerFile& layer, const fs::path& path) {
    for (const QemuExtent& e : qemu_map(path)) {
        if (e.depth != 0 || !e.data || e.zero || !e.offset) continue;
        for (std::uint64_t at = e.start; at < e.start + e.length;) {
            const Mapping m = layer.map(at);
            REQUIRE(m.state == Allocation::Data);
            REQUIRE(m.file_offset);
            CHECK(*m.file_offset == *e.offset + (at - e.start));
            at += std::min(m.length, e.start + e.length - at);
        }
    }
}

/// Opens `path` as a chain and compares bytes, allocation and top-layer file offsets.
std::unique_ptr<DiskImage> check_image(const fs::path& path, std::size_t layers, std::uint64_t granule) {
    auto image = open_chain(path.string());
    REQUIRE(format_name(image->format()) == "vmdk");
    REQUIRE(image->layers().size() == layers);
    CHECK(image->layers()[0].granule_size == granule);
    check_bytes(*image, path);
    check_allocation(*image, path);
    check_file_offsets(*open_vmdk(path.string()), path);
    return image;
}

const VmdkLayer& as_vmdk(const LayerFile& layer) {
    const auto* v = dynamic_cast<const VmdkLayer*>(&layer);
    REQUIRE(v);
    return *v;
}

void patch(const fs::path& path, std::uint64_t offset, std::uint64_t value, std::size_t width) {
    std::vector<char> bytes(width);
    for (std::size_t i = 0; i < width; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(width));
    REQUIRE(f.good());
}

void patch_text(const fs::path& path, std::uint64_t offset, const std::string& text) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    REQUIRE(f.good());
}

std::uint64_t read_le(const fs::path& path, std::uint64_t offset, std::size_t width) {
    std::ifstream f(path, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(f.get())) << (8 * i);
    REQUIRE(f.good());
    return v;
}

/// Copies [offset, offset + length) of `from` to `to` at `at`, keeping holes as holes.
void copy_range(const fs::path& from, std::uint64_t offset, std::uint64_t length, const fs::path& to,
                std::uint64_t at = 0) {
    const int in = ::open(from.c_str(), O_RDONLY);
    const int out = ::open(to.c_str(), O_WRONLY | O_CREAT, 0644);
    REQUIRE(in >= 0);
    REQUIRE(out >= 0);
    if (fs::file_size(to) < at + length) REQUIRE(::ftruncate(out, static_cast<off_t>(at + length)) == 0);
    std::vector<char> buf(1 * MiB);
    for (std::uint64_t pos = offset; pos < offset + length;) {
        const off_t data = ::lseek(in, static_cast<off_t>(pos), SEEK_DATA);
        if (data < 0 || static_cast<std::uint64_t>(data) >= offset + length) break;
        const off_t hole = ::lseek(in, data, SEEK_HOLE);
        const std::uint64_t end = std::min<std::uint64_t>(static_cast<std::uint64_t>(hole), offset + length);
        for (std::uint64_t p = static_cast<std::uint64_t>(data); p < end;) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), end - p));
            REQUIRE(::pread(in, buf.data(), n, static_cast<off_t>(p)) == static_cast<ssize_t>(n));
            REQUIRE(::pwrite(out, buf.data(), n, static_cast<off_t>(at + p - offset)) == static_cast<ssize_t>(n));
            p += n;
        }
        pos = end;
    }
    ::close(in);
    ::close(out);
}

/// Offset of `needle` in the file (which must contain it).
std::uint64_t find_in_file(const fs::path& path, const std::string& needle) {
    const std::string text = test::file_contents(path);
    const auto at = text.find(needle);
    REQUIRE(at != std::string::npos);
    return at;
}

std::uint64_t host_block_size(const fs::path& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return static_cast<std::uint64_t>(st.st_blksize);
}

std::uint32_t cid_of(const fs::path& path) {
    const auto identity = open_vmdk(path.string())->identity();
    REQUIRE(identity);
    return static_cast<std::uint32_t>(std::stoul(*identity, nullptr, 16));
}

std::vector<std::byte> read_all(const DiskImage& image) {
    std::vector<std::byte> bytes(image.size());
    image.read(0, bytes);
    return bytes;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Images qemu-img writes.

TEST_CASE("vmdk subformats written by qemu-img convert read and map like qemu", "[image][vmdk]") {
    require_qemu();
    const test::WorkDir work("convert");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    struct Case {
        std::string name, subformat;
        std::vector<std::string> options;
        bool flat;
    };
    const std::vector<Case> cases = {
        {"monolithic-sparse", "monolithicSparse", {}, false},
        {"stream-optimized", "streamOptimized", {}, false},
        {"zeroed-grain", "monolithicSparse", {"zeroed_grain=on"}, false},
        {"split-sparse", "twoGbMaxExtentSparse", {}, false},
        {"monolithic-flat", "monolithicFlat", {}, true},
        {"split-flat", "twoGbMaxExtentFlat", {}, true},
    };
    for (const Case& c : cases) {
        SECTION(c.name) {
            const fs::path image = convert(raw, dir / (c.name + ".vmdk"), c.subformat, c.options);
            const auto opened = open_vmdk(image.string());
            const auto& extents = as_vmdk(*opened).extents();
            REQUIRE(extents.size() == 1);
            const std::uint64_t granule =
                c.flat ? host_block_size(dir / extents[0].name) : 64 * KiB;
            const auto disk = check_image(image, 1, granule);
            CHECK(disk->size() == kDiskSize);
            CHECK(disk->layers()[0].allocated_bytes() > 10 * MiB);
            const auto layer = open_vmdk(image.string());
            CHECK_FALSE(layer->parent());
            const auto identity = layer->identity();
            REQUIRE(identity);
            CHECK(identity->size() == 8);
            CHECK(identity->find_first_not_of("0123456789abcdef") == std::string::npos);
            CHECK(as_vmdk(*layer).descriptor()->create_type == c.subformat);
        }
    }
}

TEST_CASE("vmdk stream-optimized grains are compressed: no file offset, inflated on read", "[image][vmdk]") {
    require_qemu();
    const test::WorkDir work("compressed");
    const fs::path& dir = work.path();
    const fs::path image = convert(standard_raw(dir), dir / "s.vmdk", "streamOptimized");
    const auto layer = open_vmdk(image.string());
    CHECK(as_vmdk(*layer).extents()[0].extent->kind() == "stream-optimized sparse");
    const Mapping text = layer->map(0);
    CHECK(text.state == Allocation::Data);
    CHECK_FALSE(text.file_offset);

    // Small reads inside one compressed grain, out of order.
    const auto disk = open_chain(image.string());
    std::vector<std::byte> whole(64 * KiB), part(100);
    disk->read(3 * MiB, whole);
    for (const std::uint64_t at : {std::uint64_t{60000}, std::uint64_t{7}, std::uint64_t{32768}}) {
        disk->read(3 * MiB + at, part);
        CHECK(std::equal(part.begin(), part.end(), whole.begin() + static_cast<std::ptrdiff_t>(at)));
    }
}

TEST_CASE("vmdk split disks with extents across the 2 GiB boundary", "[image][vmdk][slow]") {
    require_qemu();
    const test::WorkDir work("split");
    const fs::path& dir = work.path();
    const fs::path raw = dir / "big.raw";
    const std::uint64_t size = 2 * GiB + 20 * MiB + 3 * 512;
    make_raw(raw, size,
             {{0, 1 * MiB, Fill::Text},
              {2 * GiB - 100 * KiB, 300 * KiB, Fill::Random},
              {2 * GiB + 10 * MiB, 64 * KiB, Fill::Zeros},
              {size - 70 * KiB, 70 * KiB, Fill::Text}});
    for (const std::string subformat : {"twoGbMaxExtentSparse", "twoGbMaxExtentFlat"}) {
        SECTION(subformat) {
            const fs::path image = convert(raw, dir / (subformat + ".vmdk"), subformat);
            const auto layer = open_vmdk(image.string());
            const auto& extents = as_vmdk(*layer).extents();
            REQUIRE(extents.size() == 2);
            CHECK(extents[1].start == 2 * GiB);
            const bool flat = subformat == "twoGbMaxExtentFlat";
            const auto disk = check_image(image, 1, flat ? host_block_size(dir / extents[0].name) : 64 * KiB);
            CHECK(disk->size() == size);
            // Mostly empty: the whole disk maps in few calls.
            std::size_t calls = 0;
            for (std::uint64_t at = 0; at < size; ++calls) at += layer->map(at).length;
            CHECK(calls < 40);
        }
    }
}

TEST_CASE("vmdk backing chains made by qemu-img create -b match qemu-img map depths", "[image][vmdk][chain]") {
    require_qemu();
    const test::WorkDir work("chain");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    auto create = [&](const std::string& name, const std::string& backing, const std::vector<std::string>& options) {
        std::vector<std::string> argv{"qemu-img", "create", "-q", "-f", "vmdk", "-b", backing, "-F", "vmdk"};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.push_back((dir / name).string());
        run_ok(argv);
        return dir / name;
    };
    SECTION("sparse base, sparse middle, zeroed-grain top") {
        convert(raw, dir / "base.vmdk", "streamOptimized");
        const fs::path mid = create("mid.vmdk", "base.vmdk", {});
        qemu_io(mid, "vmdk", {"write -P 0xab 1M 64K", "write -P 0xac 4194816 1K", "write -P 0xad 12M 1M",
                      "write -z 3M 128K"});
        const fs::path top = create("top.vmdk", "mid.vmdk", {"-o", "zeroed_grain=on"});
        qemu_io(top, "vmdk", {"write -P 0xba 1052672 4K", "write -z 12845056 256K", "write -P 0xbb 100K 8K",
                      "write -P 0xbc 20M 2M", "write -z 5M 64K", "write -z 23072768 4K"});
        const auto disk = check_image(top, 3, 64 * KiB);
        CHECK(disk->layers()[1].path == (dir / "mid.vmdk").string());
        CHECK(disk->layers()[2].path == (dir / "base.vmdk").string());
        CHECK_FALSE(disk->layers()[0].zero.empty());
        const auto link = open_vmdk(top.string())->parent();
        REQUIRE(link);
        CHECK(link->recorded == "mid.vmdk");
        CHECK(link->candidates == std::vector<std::string>{(dir / "mid.vmdk").string()});
        REQUIRE(open_vmdk(mid.string())->identity());
        CHECK(link->expected_identities == std::vector<std::string>{*open_vmdk(mid.string())->identity()});
        CHECK(link->format == ImageFormat::Vmdk);
        CHECK(link->recorded_format == "vmdk");
    }
    SECTION("flat base") {
        convert(raw, dir / "flat.vmdk", "monolithicFlat");
        const fs::path top = create("top.vmdk", "flat.vmdk", {});
        qemu_io(top, "vmdk", {"write -P 0x11 2M 64K", "write -P 0x12 10489856 4K", "write -z 3M 64K"});
        const auto disk = check_image(top, 2, 64 * KiB);
        CHECK(format_name(disk->layers()[1].format) == "vmdk");
    }
}

// ---------------------------------------------------------------------------------------
// Variants written by our test writer and read by both qemu and us.

TEST_CASE("vmdk COWD (vmfsSparse) extents read like qemu reads them", "[image][vmdk][cowd]") {
    require_qemu();
    const test::WorkDir work("cowd");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    const std::uint64_t sectors = kDiskSize / 512;
    SECTION("descriptor with one VMFSSPARSE extent, 512-byte grains") {
        test::write_cowd_extent(raw, dir / "d-delta.vmdk");
        test::write_text_file(dir / "d.vmdk", test::vmdk_descriptor_text(0x1234abcd, 0xffffffff, "vmfsSparse",
                                                                         {{sectors, "VMFSSPARSE", "d-delta.vmdk"}}));
        const auto disk = check_image(dir / "d.vmdk", 1, 512);
        CHECK(open_vmdk((dir / "d.vmdk").string())->identity() == "1234abcd");
        CHECK(as_vmdk(*open_vmdk((dir / "d.vmdk").string())).extents()[0].extent->kind() == "cowd");
    }
    SECTION("4 KiB grains") {
        test::write_cowd_extent(raw, dir / "d-delta.vmdk", {8, ""});
        test::write_text_file(dir / "d.vmdk", test::vmdk_descriptor_text(0x1234abcd, 0xffffffff, "vmfsSparse",
                                                                         {{sectors, "VMFSSPARSE", "d-delta.vmdk"}}));
        check_image(dir / "d.vmdk", 1, 4 * KiB);
    }
    SECTION("bare COWD file named directly") {
        // qemu opens a bare sparse file only if it finds "CID" text after its first sector,
        // which a COWD header has not: compare with the same extent through a descriptor.
        test::write_cowd_extent(raw, dir / "bare-delta.vmdk");
        test::write_text_file(dir / "bare.vmdk", test::vmdk_descriptor_text(0x1, 0xffffffff, "vmfsSparse",
                                                                            {{sectors, "VMFSSPARSE", "bare-delta.vmdk"}}));
        const auto via_descriptor = check_image(dir / "bare.vmdk", 1, 512);
        const auto bare = open_chain((dir / "bare-delta.vmdk").string());
        CHECK_FALSE(open_vmdk((dir / "bare-delta.vmdk").string())->identity());
        CHECK_FALSE(open_vmdk((dir / "bare-delta.vmdk").string())->parent());
        CHECK(read_all(*bare) == read_all(*via_descriptor));
        CHECK(bare->layers()[0].allocated == via_descriptor->layers()[0].allocated);
    }
    SECTION("delta over a sparse base, linked by parentCID and parentFileNameHint") {
        const fs::path base = convert(raw, dir / "base.vmdk", "monolithicSparse");
        test::write_cowd_extent(delta_raw(dir), dir / "child-delta.vmdk");
        test::write_text_file(dir / "child.vmdk",
                              test::vmdk_descriptor_text(0x77777777, cid_of(base), "vmfsSparse",
                                                         {{sectors, "VMFSSPARSE", "child-delta.vmdk"}}, "base.vmdk"));
        const auto disk = check_image(dir / "child.vmdk", 2, 512);
        CHECK(disk->layers()[1].path == base.string());
    }
    SECTION("legacy redo log naming its parent in the header") {
        const fs::path base = convert(raw, dir / "base.vmdk", "monolithicSparse");
        test::write_cowd_extent(delta_raw(dir), dir / "redo-delta.vmdk", {1, "base.vmdk"});
        const auto link = open_vmdk((dir / "redo-delta.vmdk").string())->parent();
        REQUIRE(link);
        CHECK(link->recorded == "base.vmdk");
        CHECK(link->expected_identities.empty());
        CHECK(link->format == ImageFormat::Vmdk);
        const auto disk = open_chain((dir / "redo-delta.vmdk").string());
        REQUIRE(disk->layers().size() == 2);
        // qemu ignores the header's parent: compare with a descriptor naming the same one.
        test::write_text_file(dir / "redo.vmdk",
                              test::vmdk_descriptor_text(0x1, cid_of(base), "vmfsSparse",
                                                         {{sectors, "VMFSSPARSE", "redo-delta.vmdk"}}, "base.vmdk"));
        check_image(dir / "redo.vmdk", 2, 512);
        const auto via_descriptor = open_chain((dir / "redo.vmdk").string());
        CHECK(read_all(*disk) == read_all(*via_descriptor));
        CHECK(disk->layers()[0].allocated == via_descriptor->layers()[0].allocated);
    }
}

TEST_CASE("vmdk seSparse extents read like qemu reads them", "[image][vmdk][sesparse]") {
    require_qemu();
    const test::WorkDir work("sesparse");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    const std::uint64_t sectors = kDiskSize / 512;
    const auto descriptor = [&](const std::string& name, const std::string& extent, std::uint32_t parent_cid,
                                const std::optional<std::string>& hint) {
        test::write_text_file(dir / name, test::vmdk_descriptor_text(0xc0ffee00, parent_cid, "seSparse",
                                                                     {{sectors, "SESPARSE", extent}}, hint));
        return dir / name;
    };
    SECTION("stored, zero and unmapped grains; grain indices above 4095") {
        test::SeSparseWriteOptions options;
        options.zero = {{3 * MiB + 8 * KiB, 3 * MiB + 64 * KiB}, {20 * MiB, 21 * MiB}};
        options.unmapped = {{12 * MiB, 12 * MiB + 4 * KiB}, {22 * MiB, 22 * MiB + 512 * KiB}};
        options.first_grain_index = 5000;
        test::write_sesparse_extent(raw, dir / "s-sesparse.vmdk", options);
        const fs::path image = descriptor("s.vmdk", "s-sesparse.vmdk", 0xffffffff, std::nullopt);
        const auto disk = check_image(image, 1, 4 * KiB);
        CHECK(boost::icl::contains(test::declared_zero(*disk)[0],
                                   ByteSet::interval_type::right_open(12 * MiB, 12 * MiB + 4 * KiB)));
        // The bare extent file opened directly reads the same.
        const auto bare = open_chain((dir / "s-sesparse.vmdk").string());
        CHECK(read_all(*bare) == read_all(*disk));
        CHECK(bare->layers()[0].allocated == disk->layers()[0].allocated);
        CHECK(test::declared_zero(*bare)[0] == test::declared_zero(*disk)[0]);
    }
    SECTION("delta over a flat base") {
        const fs::path base = convert(raw, dir / "base.vmdk", "monolithicFlat");
        test::SeSparseWriteOptions options;
        options.zero = {{100 * KiB, 132 * KiB}};
        options.unmapped = {{10 * MiB, 10 * MiB + 64 * KiB}};
        test::write_sesparse_extent(delta_raw(dir), dir / "c-sesparse.vmdk", options);
        const fs::path image = descriptor("c.vmdk", "c-sesparse.vmdk", cid_of(base), "base.vmdk");
        check_image(image, 2, 4 * KiB);
    }
}

TEST_CASE("vmdk stream-optimized files with the grain directory at the end", "[image][vmdk][stream]") {
    require_qemu();
    const test::WorkDir work("stream");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    const std::string text = test::vmdk_descriptor_text(0xabcdef01, 0xffffffff, "streamOptimized",
                                                        {{kDiskSize / 512, "SPARSE", "st.vmdk"}});
    const fs::path image = dir / "st.vmdk";
    test::write_stream_optimized(raw, image, text);
    SECTION("reads like qemu") {
        check_image(image, 1, 64 * KiB);
        const auto layer = open_vmdk(image.string());
        CHECK(layer->identity() == "abcdef01");
        const auto* sparse = dynamic_cast<const VmdkGrainExtent*>(as_vmdk(*layer).extents()[0].extent.get());
        REQUIRE(sparse);
        CHECK(sparse->grain_bytes() == 64 * KiB);
    }
    SECTION("32 KiB grains") {
        test::write_stream_optimized(raw, image, text, 64);
        check_image(image, 1, 32 * KiB);
    }
    SECTION("truncated: no footer") {
        fs::resize_file(image, fs::file_size(image) - 512);
        std::string message;
        CHECK(kind_of([&] { (void)open_vmdk(image.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("footer") != std::string::npos);
    }
    SECTION("truncated in the middle") {
        fs::resize_file(image, fs::file_size(image) / 2);
        CHECK(kind_of([&] { (void)open_chain(image.string()); }) == ErrorKind::Corrupt);
    }
}

TEST_CASE("vmdk descriptors mixing extent kinds", "[image][vmdk]") {
    require_qemu();
    const test::WorkDir work("mixed");
    const fs::path& dir = work.path();
    // Four extents: a flat range 1 MiB into a file, a hosted sparse file, a COWD and a
    // seSparse extent, each made from its own part of one source disk, at odd offsets.
    const auto build = [&](std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
        const std::uint64_t total = a + b + c + d;
        const fs::path whole = dir / "whole.raw";
        make_raw(whole, total,
                 {{0, 200 * KiB, Fill::Text},
                  {a - 1000, 3000, Fill::Random},
                  {a + 2 * MiB, 1 * MiB, Fill::Random},
                  {a + b - 10 * KiB, 20 * KiB, Fill::Text},
                  {a + b + c - 4096, 300 * KiB, Fill::Random},
                  {total - 512, 512, Fill::Text}});
        const auto part = [&](const std::string& name, std::uint64_t offset, std::uint64_t length) {
            const fs::path out = dir / name;
            fs::remove(out);
            copy_range(whole, offset, length, out);
            return out;
        };
        const fs::path flat = dir / "m-flat.vmdk";  // 1 MiB of junk, then the data
        make_raw(flat, 1 * MiB + a, {{0, 1 * MiB, Fill::Random}}, 99);
        copy_range(whole, 0, a, flat, 1 * MiB);
        convert(part("p2.raw", a, b), dir / "m-s002.vmdk", "monolithicSparse");
        test::write_cowd_extent(part("p3.raw", a + b, c), dir / "m-delta.vmdk");
        test::write_sesparse_extent(part("p4.raw", a + b + c, d), dir / "m-sesparse.vmdk");
        const fs::path image = dir / "m.vmdk";
        test::write_text_file(image, test::vmdk_descriptor_text(0x5eed, 0xffffffff, "twoGbMaxExtentSparse",
                                                                {{a / 512, "FLAT", "m-flat.vmdk", 2048},
                                                                 {b / 512, "SPARSE", "m-s002.vmdk"},
                                                                 {c / 512, "VMFSSPARSE", "m-delta.vmdk"},
                                                                 {d / 512, "SESPARSE", "m-sesparse.vmdk"}}));
        return image;
    };
    const auto check_against_source = [&](const DiskImage& disk) {
        const std::string expected = test::file_contents(dir / "whole.raw");
        REQUIRE(disk.size() == expected.size());
        const auto ours = read_all(disk);
        CHECK(std::memcmp(ours.data(), expected.data(), expected.size()) == 0);
    };
    SECTION("extents ending on grain boundaries, read like qemu") {
        const fs::path image = build(3 * MiB + 512, 5 * MiB, 2 * MiB + 3 * 512, 4 * MiB);
        // Extents start at odd sectors: runs can only be aligned to sectors.
        const auto disk = check_image(image, 1, 512);
        check_against_source(*disk);
        const auto opened = open_vmdk(image.string());
        const auto& extents = as_vmdk(*opened).extents();
        REQUIRE(extents.size() == 4);
        CHECK(extents[0].extent->kind() == "flat");
        CHECK(extents[1].extent->kind() == "sparse");
        CHECK(extents[2].extent->kind() == "cowd");
        CHECK(extents[3].extent->kind() == "sesparse");
    }
    SECTION("a sparse extent ending inside a grain") {
        // qemu reads such an extent's last grain past the extent's end (into what belongs
        // to the next extent), so only the source disk is the reference here.
        const fs::path image = build(3 * MiB + 512, 5 * MiB + 1024, 2 * MiB + 3 * 512, 4 * MiB + 4096);
        check_against_source(*open_chain(image.string()));
    }
}

TEST_CASE("vmdk ZERO and RDONLY extents (qemu skips those lines)", "[image][vmdk]") {
    const test::WorkDir work("zero");
    const fs::path& dir = work.path();
    make_raw(dir / "z-flat.vmdk", 2 * MiB, {{0, 2 * MiB, Fill::Random}});
    test::write_text_file(dir / "z.vmdk", test::vmdk_descriptor_text(0x2, 0xffffffff, "monolithicFlat",
                                                                     {{2048, "FLAT", "z-flat.vmdk", 0},
                                                                      {4096, "ZERO", ""},
                                                                      {2048, "FLAT", "z-flat.vmdk", 2048, "RDONLY"}}));
    const auto disk = open_chain((dir / "z.vmdk").string());
    REQUIRE(disk->size() == 4 * MiB);
    const std::string flat = test::file_contents(dir / "z-flat.vmdk");
    const auto bytes = read_all(*disk);
    CHECK(std::memcmp(bytes.data(), flat.data(), 1 * MiB) == 0);
    CHECK(std::all_of(bytes.begin() + 1 * MiB, bytes.begin() + 3 * MiB, [](std::byte b) { return b == std::byte{0}; }));
    CHECK(std::memcmp(bytes.data() + 3 * MiB, flat.data() + 1 * MiB, 1 * MiB) == 0);
    CHECK(test::declared_zero(*disk)[0] == ByteSet(ByteSet::interval_type::right_open(1 * MiB, 3 * MiB)));
    CHECK(disk->layers()[0].allocated_bytes() == 2 * MiB);
}

// ---------------------------------------------------------------------------------------
// Descriptor text and parent names.

TEST_CASE("vmdk descriptor parsing", "[image][vmdk][unit]") {
    SECTION("keys, quotes, comments, CRLF, extents of every type") {
        const std::string text =
            "# Disk DescriptorFile\r\nversion=1\r\nCID=FFFFFFFE\r\n  parentCID = 0badf00d  \r\n"
            "createType=\"vmfsSparse\"\r\nparentFileNameHint=\"..\\\\base dir\\\\base #1.vmdk\"\r\n"
            "# Extent description\r\n"
            "RW 100 FLAT \"a b.vmdk\" 7\r\n"
            "RDONLY 200 SPARSE \"s.vmdk\"\r\n"
            "NOACCESS 300 ZERO\r\n"
            "RW 400 VMFS \"v.vmdk\"\r\n"
            "RW 500 VMFSSPARSE \"d.vmdk\"\r\n"
            "RW 600 VMFSRDM \"r.vmdk\"\r\n"
            "RW 700 VMFSRAW \"/dev/x\" 0 1234-5678 device\r\n"
            "RW 800 SESPARSE old-unquoted.vmdk\r\n"
            "\r\n#DDB\r\nddb.adapterType = \"lsilogic\"\r\nddb.uuid = \"60 00 C2 9a\"\r\nnonsense line\r\n";
        const VmdkDescriptor d = parse_vmdk_descriptor(text + std::string(100, '\0') + "RW 1 FLAT \"ignored\" 0");
        CHECK(d.cid == 0xfffffffeu);
        CHECK(d.parent_cid == 0x0badf00du);
        CHECK(d.create_type == "vmfsSparse");
        CHECK(d.parent_hint == "..\\\\base dir\\\\base #1.vmdk");
        REQUIRE(d.extents.size() == 8);
        CHECK(d.extents[0].file == "a b.vmdk");
        CHECK(d.extents[0].offset == 7);
        CHECK(d.extents[1].access == VmdkAccess::ReadOnly);
        CHECK(d.extents[2].type == VmdkExtentType::Zero);
        CHECK(d.extents[2].file.empty());
        CHECK(d.extents[2].access == VmdkAccess::NoAccess);
        CHECK(d.extents[3].type == VmdkExtentType::Vmfs);
        CHECK(d.extents[4].type == VmdkExtentType::VmfsSparse);
        CHECK(d.extents[5].type == VmdkExtentType::VmfsRdm);
        CHECK(d.extents[6].type == VmdkExtentType::VmfsRaw);
        CHECK(d.extents[6].file == "/dev/x");
        CHECK(d.extents[7].type == VmdkExtentType::SeSparse);
        CHECK(d.extents[7].file == "old-unquoted.vmdk");
        CHECK(d.total_sectors() == 3600);
        CHECK(d.values.at("ddb.adapterType") == "lsilogic");
        CHECK(d.values.at("ddb.uuid") == "60 00 C2 9a");
    }
    SECTION("no parent by default") {
        const VmdkDescriptor d = parse_vmdk_descriptor("CID=1\n");
        CHECK(d.parent_cid == VmdkDescriptor::kNoParent);
        CHECK_FALSE(d.parent_hint);
        CHECK(d.extents.empty());
    }
    SECTION("malformed lines") {
        std::string message;
        const auto bad = [&](const std::string& t) {
            return kind_of([&] { (void)parse_vmdk_descriptor(t); }, &message);
        };
        CHECK(bad("CID=xyz\n") == ErrorKind::Corrupt);
        CHECK(message == "descriptor line 1: CID \"xyz\" is not a 32-bit hex number");
        CHECK(bad("CID=123456789\n") == ErrorKind::Corrupt);
        CHECK(bad("\nRW abc FLAT \"x\" 0\n") == ErrorKind::Corrupt);
        CHECK(message.find("descriptor line 2") == 0);
        CHECK(bad("RW 0 FLAT \"x\" 0\n") == ErrorKind::Corrupt);
        CHECK(bad("RW 10 FLAT \"x 0\n") == ErrorKind::Corrupt);
        CHECK(bad("RW 10 SPARSE\n") == ErrorKind::Corrupt);
        CHECK(bad("RW 10 FLAT \"x\" minus\n") == ErrorKind::Corrupt);
        CHECK(bad("RW 18446744073709551615 ZERO\nRW 1 ZERO\n") == ErrorKind::Corrupt);
        CHECK(bad("RW 10 VMFSTHIN \"x\"\n") == ErrorKind::Unsupported);
        CHECK(message == "vmdk: extent type \"VMFSTHIN\" is not supported");
    }
}

TEST_CASE("vmdk parent names resolve like VMware resolves them", "[image][vmdk][chain]") {
    const test::WorkDir work("names");
    const fs::path& dir = work.path();
    make_raw(dir / "c-flat.vmdk", 1 * MiB, {});
    const auto link_for = [&](const std::string& hint) {
        test::write_text_file(dir / "c.vmdk", test::vmdk_descriptor_text(0x2, 0x1, "monolithicFlat",
                                                                         {{2048, "FLAT", "c-flat.vmdk", 0}}, hint));
        const auto link = open_vmdk((dir / "c.vmdk").string())->parent();
        REQUIRE(link);
        CHECK(link->recorded == hint);
        CHECK(link->expected_identities == std::vector<std::string>{"00000001"});
        return link->candidates;
    };
    const std::string d = dir.string();
    CHECK(link_for("base.vmdk") == std::vector<std::string>{d + "/base.vmdk"});
    CHECK(link_for("sub/base.vmdk") == std::vector<std::string>{d + "/sub/base.vmdk"});
    CHECK(link_for("/vmfs/volumes/ds1/vm/base.vmdk") ==
          std::vector<std::string>{"/vmfs/volumes/ds1/vm/base.vmdk", d + "/base.vmdk"});
    CHECK(link_for("C:\\VMs\\Win10\\base.vmdk") == std::vector<std::string>{"C:\\VMs\\Win10\\base.vmdk", d + "/base.vmdk"});
    CHECK(link_for("..\\base\\base.vmdk") == std::vector<std::string>{d + "/../base/base.vmdk", d + "/base.vmdk"});
    CHECK(link_for("\\\\server\\share\\base.vmdk") ==
          std::vector<std::string>{"\\\\server\\share\\base.vmdk", d + "/base.vmdk"});

    SECTION("a parent CID without a hint") {
        test::write_text_file(dir / "c.vmdk", test::vmdk_descriptor_text(0x2, 0x1, "monolithicFlat",
                                                                         {{2048, "FLAT", "c-flat.vmdk", 0}}));
        std::string message;
        CHECK(kind_of([&] { (void)open_chain((dir / "c.vmdk").string()); }, &message) == ErrorKind::NotFound);
        CHECK(message.find("CID 00000001") != std::string::npos);
    }
    SECTION("a hint naming a qcow2 file is refused: a VMDK's parent is a VMDK") {
        require_qemu();
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", (dir / "base.qcow2").string(), "1M"});
        test::write_text_file(dir / "c.vmdk",
                              test::vmdk_descriptor_text(0x2, 0x1, "monolithicFlat",
                                                         {{2048, "FLAT", "c-flat.vmdk", 0}}, "base.qcow2"));
        std::string message;
        CHECK(kind_of([&] { (void)open_chain((dir / "c.vmdk").string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "parent " + d + "/base.qcow2 of " + (dir / "c.vmdk").string() +
                             " is recorded as vmdk but its content is qcow2");
    }
}

// ---------------------------------------------------------------------------------------
// Bad input.

TEST_CASE("vmdk hosted sparse damage is corrupt and named", "[image][vmdk][bad]") {
    require_qemu();
    const test::WorkDir work("damaged");
    const fs::path& dir = work.path();
    const fs::path image = convert(standard_raw(dir), dir / "d.vmdk", "monolithicSparse");
    const std::uint64_t gd = read_le(image, 56, 8) * 512;
    const std::uint64_t gt = read_le(image, gd, 4) * 512;
    std::string message;
    const auto expect = [&](ErrorKind kind, const std::string& needle) {
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == kind);
        INFO(message);
        CHECK(message.find(needle) != std::string::npos);
    };
    SECTION("file truncated inside the header") {
        fs::resize_file(image, 300);
        expect(ErrorKind::Corrupt, "sparse extent header at offset 0 lies past the end of the file (300 bytes)");
    }
    SECTION("file truncated inside the data") {
        fs::resize_file(image, fs::file_size(image) / 2);
        expect(ErrorKind::Corrupt, "lies past the end of the file");
    }
    SECTION("grain directory entry past the end of the file") {
        patch(image, gd, 0x7fffffff, 4);
        expect(ErrorKind::Corrupt, "grain directory entry 0: grain table at offset " +
                                       std::to_string(std::uint64_t{0x7fffffff} * 512) + " lies past the end of the file");
    }
    SECTION("grain table entry past the end of the file") {
        patch(image, gt, 0x10000000, 4);
        expect(ErrorKind::Corrupt, "grain table 0 entry 0: grain at offset " +
                                       std::to_string(std::uint64_t{0x10000000} * 512) + " lies past the end of the file");
    }
    SECTION("grain directory past the end of the file") {
        patch(image, 56, 0x100000000ull, 8);
        expect(ErrorKind::Corrupt, "grain directory at sector 4294967296");
    }
    SECTION("grain size not a power of two") {
        patch(image, 20, 100, 8);
        expect(ErrorKind::Corrupt, "grain size of 100 sectors is not a power of two");
    }
    SECTION("grain size too small") {
        patch(image, 20, 4, 8);
        expect(ErrorKind::Corrupt, "grain size of 4 sectors");
    }
    SECTION("absurd capacity") {
        patch(image, 12, std::uint64_t{1} << 40, 8);
        expect(ErrorKind::Unsupported, "exceeds the 64 TiB limit");
    }
    SECTION("zero capacity") {
        patch(image, 12, 0, 8);
        expect(ErrorKind::Corrupt, "capacity of 0 sectors");
    }
    SECTION("capacity disagreeing with the embedded descriptor") {
        patch(image, 12, read_le(image, 12, 8) + 128, 8);
        expect(ErrorKind::Corrupt, "embedded descriptor extents sum to");
    }
    SECTION("end-of-line test bytes mangled by a text-mode copy") {
        patch(image, 75, '\n', 1);
        expect(ErrorKind::Corrupt, "end-of-line test bytes are damaged");
    }
    SECTION("version 4") {
        patch(image, 4, 4, 4);
        expect(ErrorKind::Unsupported, "vmdk: sparse extent version 4 is not supported");
    }
    SECTION("unknown incompatible flag") {
        patch(image, 8, read_le(image, 8, 4) | 0x40000, 4);
        expect(ErrorKind::Unsupported, "vmdk: sparse extent flags 0x40000 are not supported");
    }
    SECTION("unknown compression algorithm") {
        patch(image, 77, 2, 2);
        expect(ErrorKind::Unsupported, "vmdk: compression algorithm 2 is not supported");
    }
    SECTION("too many grain table entries per table") {
        patch(image, 44, 1024, 4);
        expect(ErrorKind::Unsupported, "grain tables of 1024 entries are not supported");
    }
}

TEST_CASE("vmdk damaged compressed grains are corrupt when read", "[image][vmdk][bad]") {
    require_qemu();
    const test::WorkDir work("deflate");
    const fs::path& dir = work.path();
    const fs::path image = convert(standard_raw(dir), dir / "c.vmdk", "streamOptimized");
    const std::uint64_t gd = read_le(image, 56, 8) * 512;
    const std::uint64_t gt = read_le(image, gd, 4) * 512;
    const std::uint64_t grain = read_le(image, gt, 4) * 512;  // grain 0 (text) is stored
    REQUIRE(grain != 0);
    std::string message;
    SECTION("bad deflate data") {
        patch(image, grain + 12, 0xdeadbeefdeadbeefull, 8);
        CHECK(kind_of([&] { (void)read_all(*open_chain(image.string())); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "compressed grain 0 at offset " + std::to_string(grain) + " does not inflate (bad deflate data)");
    }
    SECTION("truncated stream") {
        patch(image, grain + 8, 10, 4);
        CHECK(kind_of([&] { (void)read_all(*open_chain(image.string())); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("does not inflate") != std::string::npos);
    }
    SECTION("marker naming another sector") {
        patch(image, grain, 128, 8);
        CHECK(kind_of([&] { (void)read_all(*open_chain(image.string())); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("its marker names sector 128") != std::string::npos);
    }
    SECTION("absurd compressed size") {
        patch(image, grain + 8, 0x7fffffff, 4);
        CHECK(kind_of([&] { (void)read_all(*open_chain(image.string())); }) == ErrorKind::Corrupt);
    }
}

TEST_CASE("vmdk COWD and seSparse damage", "[image][vmdk][bad]") {
    const test::WorkDir work("extent-damage");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    std::string message;
    SECTION("cowd: too few grain directory entries") {
        test::write_cowd_extent(raw, dir / "x-delta.vmdk");
        patch(dir / "x-delta.vmdk", 24, 1, 4);
        CHECK(kind_of([&] { (void)open_vmdk((dir / "x-delta.vmdk").string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("grain directory entries, the capacity needs") != std::string::npos);
    }
    SECTION("cowd: grain table past the end of the file") {
        test::write_cowd_extent(raw, dir / "x-delta.vmdk");
        patch(dir / "x-delta.vmdk", 4 * 512, 0x40000000, 4);
        CHECK(kind_of([&] { (void)open_chain((dir / "x-delta.vmdk").string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("grain directory entry 0: grain table at offset") != std::string::npos);
    }
    SECTION("cowd: grain size not a power of two") {
        test::write_cowd_extent(raw, dir / "x-delta.vmdk");
        patch(dir / "x-delta.vmdk", 16, 3, 4);
        CHECK(kind_of([&] { (void)open_vmdk((dir / "x-delta.vmdk").string()); }, &message) == ErrorKind::Corrupt);
    }
    SECTION("cowd: version 2") {
        test::write_cowd_extent(raw, dir / "x-delta.vmdk");
        patch(dir / "x-delta.vmdk", 4, 2, 4);
        CHECK(kind_of([&] { (void)open_vmdk((dir / "x-delta.vmdk").string()); }, &message) == ErrorKind::Unsupported);
    }
    SECTION("cowd: truncated header") {
        test::write_cowd_extent(raw, dir / "x-delta.vmdk");
        fs::resize_file(dir / "x-delta.vmdk", 1000);
        CHECK(kind_of([&] { (void)open_vmdk((dir / "x-delta.vmdk").string()); }) == ErrorKind::Corrupt);
    }
    const fs::path se = dir / "x-sesparse.vmdk";
    SECTION("sesparse: journal to replay") {
        test::write_sesparse_extent(raw, se, {{}, {}, 0, true});
        CHECK(kind_of([&] { (void)open_vmdk(se.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "vmdk: replaying a sesparse journal (the disk was not closed cleanly) is not supported");
    }
    SECTION("sesparse: bad grain directory entry") {
        test::write_sesparse_extent(raw, se);
        patch(se, read_le(se, 128, 8) * 512, 0x2000000000000001ull, 8);
        CHECK(kind_of([&] { (void)open_chain(se.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("is not a grain table reference") != std::string::npos);
    }
    SECTION("sesparse: unknown grain type and grains outside the area") {
        test::write_sesparse_extent(raw, se);
        const std::uint64_t gt = read_le(se, 144, 8) * 512;  // a table of stored grains
        const std::uint64_t entries = 4096;
        std::uint64_t at = gt;
        while (read_le(se, at, 8) == 0 && at < gt + entries * 8) at += 8;
        REQUIRE(at < gt + entries * 8);
        patch(se, at, 0x4000000000000000ull, 8);
        CHECK(kind_of([&] { (void)open_chain(se.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("has an unknown grain type") != std::string::npos);
        patch(se, at, 0x3000000000000000ull | 0xffffffffull, 8);
        CHECK(kind_of([&] { (void)open_chain(se.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("outside the grain area") != std::string::npos);
    }
    SECTION("sesparse: other version, grain size, flags") {
        test::write_sesparse_extent(raw, se);
        patch(se, 8, 0x0000000300000001ull, 8);
        CHECK(kind_of([&] { (void)open_vmdk(se.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "vmdk: sesparse version 3.1 is not supported");
        test::write_sesparse_extent(raw, se);
        patch(se, 24, 16, 8);
        CHECK(kind_of([&] { (void)open_vmdk(se.string()); }) == ErrorKind::Unsupported);
        test::write_sesparse_extent(raw, se);
        patch(se, 40, 1, 8);
        CHECK(kind_of([&] { (void)open_vmdk(se.string()); }) == ErrorKind::Unsupported);
    }
    SECTION("sesparse: absurd capacity and bad volatile header") {
        test::write_sesparse_extent(raw, se);
        patch(se, 16, std::uint64_t{1} << 40, 8);
        CHECK(kind_of([&] { (void)open_vmdk(se.string()); }) == ErrorKind::Unsupported);
        test::write_sesparse_extent(raw, se);
        patch(se, 512, 0, 8);
        CHECK(kind_of([&] { (void)open_vmdk(se.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "sesparse volatile header: bad magic");
    }
}

TEST_CASE("vmdk descriptors with missing, mis-sized or unsupported extents", "[image][vmdk][bad]") {
    require_qemu();
    const test::WorkDir work("descriptor");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    const std::uint64_t sectors = kDiskSize / 512;
    convert(raw, dir / "s.vmdk", "twoGbMaxExtentSparse");
    make_raw(dir / "f.raw", kDiskSize, {{0, 4096, Fill::Text}});
    const fs::path image = dir / "x.vmdk";
    std::string message;
    const auto write = [&](const std::vector<test::DescriptorExtent>& extents, const std::string& type = "custom") {
        test::write_text_file(image, test::vmdk_descriptor_text(0x1, 0xffffffff, type, extents));
    };
    SECTION("missing extent file") {
        write({{sectors / 2, "FLAT", "f.raw", 0}, {sectors - sectors / 2, "SPARSE", "gone-s002.vmdk"}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::NotFound);
        CHECK(message == "extent 2 file not found: gone-s002.vmdk (looked for " + (dir / "gone-s002.vmdk").string() + ")");
    }
    SECTION("extent size differing from the sparse header") {
        write({{sectors - 128, "SPARSE", "s-s001.vmdk"}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "extent 1 (s-s001.vmdk): the descriptor gives it " + std::to_string(sectors - 128) +
                             " sectors, its header " + std::to_string(sectors));
    }
    SECTION("flat extent larger than its file") {
        write({{sectors + 8, "FLAT", "f.raw", 0}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("extent 1 (f.raw): flat extent needs") == 0);
    }
    SECTION("flat extent whose offset pushes it past the file") {
        write({{sectors, "FLAT", "f.raw", 1}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }) == ErrorKind::Corrupt);
    }
    SECTION("sparse extent that is not a sparse file") {
        write({{sectors, "SPARSE", "f.raw"}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "extent 1 (f.raw): not a sparse extent file (unknown magic)");
    }
    SECTION("no extents") {
        write({});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "vmdk descriptor lists no extents");
    }
    SECTION("absurd total size") {
        write({{std::uint64_t{1} << 40, "ZERO", ""}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
    }
    SECTION("NOACCESS extent") {
        write({{sectors, "FLAT", "f.raw", 0, "NOACCESS"}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "vmdk: NOACCESS extents are not supported");
    }
    SECTION("raw device mapping") {
        write({{sectors, "VMFSRDM", "x-rdm.vmdk"}}, "vmfsRawDeviceMap");
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "vmdk: vmfsRawDeviceMap disks (host device extents) are not supported");
        write({{sectors, "VMFSRDM", "x-rdm.vmdk"}});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "vmdk: raw device mapping extents (VMFSRDM) are not supported");
    }
    SECTION("host device disks") {
        write({{sectors, "FLAT", "/dev/sda", 0}}, "fullDevice");
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "vmdk: fullDevice disks (host device extents) are not supported");
    }
    SECTION("a descriptor that is not one") {
        make_raw(image, 4096, {{0, 4096, Fill::Random}});
        CHECK(kind_of([&] { (void)open_vmdk(image.string()); }) == ErrorKind::Corrupt);
    }
}

TEST_CASE("vmdk parents: CID mismatch, missing parent, loops, --parent", "[image][vmdk][chain][bad]") {
    require_qemu();
    const test::WorkDir work("parents");
    const fs::path& dir = work.path();
    const fs::path raw = standard_raw(dir);
    const fs::path base = convert(raw, dir / "base.vmdk", "monolithicSparse");
    run_ok({"qemu-img", "create", "-q", "-f", "vmdk", "-b", "base.vmdk", "-F", "vmdk", (dir / "top.vmdk").string()});
    qemu_io(dir / "top.vmdk", "vmdk", {"write -P 0x11 2M 64K"});
    std::string message;
    SECTION("the parent's CID changed since the child was made") {
        const std::uint64_t at = find_in_file(base, "CID=") + 4;
        // qemu writes the CID without leading zeros; the new one takes exactly its digits,
        // so the descriptor's next line stays intact.
        const std::size_t digits = find_in_file(base, "\nparentCID=") - at;
        REQUIRE(digits >= 4);
        patch_text(base, at, std::string(digits - 4, '0') + "beef");
        CHECK(kind_of([&] { (void)open_chain((dir / "top.vmdk").string()); }, &message) == ErrorKind::Corrupt);
        INFO(message);
        CHECK(message.find("expected id") != std::string::npos);
        CHECK(message.find("found 0000beef") != std::string::npos);
    }
    SECTION("a missing parent is named by its parentFileNameHint") {
        fs::rename(base, dir / "moved.vmdk");
        CHECK(kind_of([&] { (void)open_chain((dir / "top.vmdk").string()); }, &message) == ErrorKind::NotFound);
        CHECK(message.find("parent not found: " + (dir / "top.vmdk").string() + " (depth 0) records parent base.vmdk") == 0);
        const auto disk = open_chain((dir / "top.vmdk").string(), {{1, {}, (dir / "moved.vmdk").string()}});
        CHECK(disk->layers().size() == 2);
    }
    SECTION("a loop of two descriptors") {
        make_raw(dir / "l-flat.raw", kDiskSize, {});
        test::write_text_file(dir / "a.vmdk", test::vmdk_descriptor_text(0xa, 0xb, "monolithicFlat",
                                                                         {{kDiskSize / 512, "FLAT", "l-flat.raw", 0}},
                                                                         "b.vmdk"));
        test::write_text_file(dir / "b.vmdk", test::vmdk_descriptor_text(0xb, 0xa, "monolithicFlat",
                                                                         {{kDiskSize / 512, "FLAT", "l-flat.raw", 0}},
                                                                         "a.vmdk"));
        CHECK(kind_of([&] { (void)open_chain((dir / "a.vmdk").string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("loop") != std::string::npos);
    }
    SECTION("a disk naming itself") {
        make_raw(dir / "l-flat.raw", kDiskSize, {});
        test::write_text_file(dir / "self.vmdk",
                              test::vmdk_descriptor_text(0xa, 0xa, "monolithicFlat",
                                                         {{kDiskSize / 512, "FLAT", "l-flat.raw", 0}}, "./self.vmdk"));
        CHECK(kind_of([&] { (void)open_chain((dir / "self.vmdk").string()); }) == ErrorKind::Corrupt);
    }
}

// ---------------------------------------------------------------------------------------
// Scale and threads.

TEST_CASE("vmdk maps a large, mostly empty disk in few calls", "[image][vmdk]") {
    require_qemu();
    const test::WorkDir work("large");
    const fs::path& dir = work.path();
    const fs::path image = dir / "big.vmdk";
    run_ok({"qemu-img", "create", "-q", "-f", "vmdk", image.string(), "1T"});
    qemu_io(image, "vmdk", {"write -P 0x42 0 64K", "write -P 0x43 600G 1M"});
    const auto layer = open_vmdk(image.string());
    std::size_t calls = 0;
    for (std::uint64_t at = 0; at < layer->virtual_size(); ++calls) at += layer->map(at).length;
    CHECK(calls < 400);
    const auto disk = open_chain(image.string());
    CHECK(disk->layers()[0].allocated_bytes() == 64 * KiB + 1 * MiB);
}

TEST_CASE("vmdk serves concurrent readers", "[image][vmdk][threads]") {
    require_qemu();
    const test::WorkDir work("threads");
    const fs::path& dir = work.path();
    const fs::path image = convert(standard_raw(dir), dir / "t.vmdk", "streamOptimized");
    const auto disk = open_chain(image.string());
    const auto expected = read_all(*disk);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            std::vector<std::byte> buf(37 * KiB + 13);
            for (std::uint64_t i = 0; i < 300; ++i) {
                const std::uint64_t at = mix(i * 4 + static_cast<std::uint64_t>(t)) % (disk->size() - buf.size());
                disk->read(at, buf);
                if (std::memcmp(buf.data(), expected.data() + at, buf.size()) != 0) ++mismatches;
            }
        });
    for (auto& th : threads) th.join();
    CHECK(mismatches == 0);
}
