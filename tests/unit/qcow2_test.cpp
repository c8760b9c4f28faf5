// SPDX-License-Identifier: GPL-2.0-or-later
// The qcow2 reader against qemu as the oracle: every image is made by qemu-img/qemu-io
// from deterministic source data; our bytes must equal `qemu-img convert -O raw` and each
// layer's allocation must equal what `qemu-img map --output=json` reports at its depth.
// Damaged images are made by patching header and table bytes.
#include <catch2/catch.hpp>

#include <fcntl.h>
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
#include "core/image/open_image.hpp"
#include "core/image/qcow2.hpp"
#include "core/image/qcow2_header.hpp"
#include "core/image/qcow2_inflate.hpp"
#include "core/image/qcow2_l2.hpp"
#include "core/image/qcow2_layer.hpp"
#include "support/declared_zero.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"

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

std::string at(std::uint64_t offset) { return std::to_string(offset); }

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

/// A sparse raw file with deterministic content in `regions` and holes elsewhere.
/// Random data does not compress (qemu then stores the cluster plainly); text does.
void make_raw(const fs::path& path, std::uint64_t size, const std::vector<Region>& regions,
              std::uint64_t seed = 1) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
    for (const Region& r : regions) {
        std::vector<char> bytes(r.length);
        for (std::uint64_t i = 0; i < r.length; ++i) {
            const std::uint64_t at = r.offset + i;
            switch (r.fill) {
                case Fill::Random:
                    bytes[i] = static_cast<char>(mix(seed * 1000003 + at / 8) >> (8 * (at % 8)));
                    break;
                case Fill::Text: {
                    const std::string line =
                        "guestfrag qcow2 line " + std::to_string((at / 64) % 997 + seed) + "\n";
                    bytes[i] = line[at % line.size()];
                    break;
                }
                case Fill::Zeros:
                    bytes[i] = 0;
                    break;
            }
        }
        REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(r.offset)) ==
                static_cast<ssize_t>(bytes.size()));
    }
    ::close(fd);
}

/// The standard source disk: not a multiple of any cluster size, data at odd offsets,
/// a tail in the last partial cluster, explicit zeros (qemu-img convert leaves those out).
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

fs::path convert(const fs::path& raw, const fs::path& out, const std::vector<std::string>& options) {
    std::vector<std::string> argv{"qemu-img", "convert", "-f", "raw", "-O", "qcow2"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(raw.string());
    argv.push_back(out.string());
    run_ok(argv);
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
/// chunks so they cross cluster and run boundaries).
void check_bytes(const DiskImage& image, const fs::path& path) {
    const fs::path raw = path.string() + ".qemu.raw";
    run_ok({"qemu-img", "convert", "-O", "raw", path.string(), raw.string()});
    REQUIRE(fs::file_size(raw) == image.size());
    std::ifstream in(raw, std::ios::binary);
    const std::size_t chunk = 3 * MiB + 4097;
    std::vector<std::byte> ours(chunk);
    std::vector<char> theirs(chunk);
    for (std::uint64_t offset = 0; offset < image.size();) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, image.size() - offset));
        image.read(offset, std::span(ours).first(n));
        in.read(theirs.data(), static_cast<std::streamsize>(n));
        REQUIRE(in.gcount() == static_cast<std::streamsize>(n));
        if (std::memcmp(ours.data(), theirs.data(), n) != 0) {
            std::size_t i = 0;
            while (ours[i] == static_cast<std::byte>(theirs[i])) ++i;
            FAIL("first difference from qemu-img at byte " << offset + i);
        }
        offset += n;
    }
    fs::remove(raw);
}

/// Each layer's allocation equals qemu-img map at its depth. qemu reports a range only at
/// the topmost layer that has it, so ours is compared after removing what layers above
/// already cover. data:true = stored in that layer (also where the host file has a hole
/// inside a stored cluster: qemu then adds zero:true); zero:true with data:false and
/// present:true = declared zero there. Raw layers report host holes as present zeros, while
/// our raw layer leaves them unallocated, so only their data is compared.
void check_allocation(const DiskImage& image, const fs::path& path) {
    const auto& layers = image.layers();
    std::vector<ByteSet> data(layers.size()), zero(layers.size());
    for (const QemuExtent& e : qemu_map(path)) {
        REQUIRE(e.depth < layers.size());
        const auto range = ByteSet::interval_type::right_open(e.start, e.start + e.length);
        if (e.data)
            data[e.depth] += range;
        else if (e.zero && e.present)
            zero[e.depth] += range;
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
        if (layer.format != ImageFormat::Raw) CHECK(ours_zero == zero[d]);
        above += layer.allocated;
        above += declared[d];
    }
}

/// Where qemu reports a host offset for top-layer data, our map() must report the same.
void check_file_offsets(const LayerFile& layer, const fs::path& path) {
    for (const QemuExtent& e : qemu_map(path)) {
        if (e.depth != 0 || !e.data || !e.offset) continue;
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
    REQUIRE(format_name(image->format()) == "qcow2");
    REQUIRE(image->layers().size() == layers);
    CHECK(image->layers()[0].granule_size == granule);
    check_bytes(*image, path);
    check_allocation(*image, path);
    check_file_offsets(*open_qcow2(path.string()), path);
    return image;
}

void patch(const fs::path& path, std::uint64_t offset, const std::vector<std::uint8_t>& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(f.good());
}

std::vector<std::uint8_t> be(std::uint64_t value, std::size_t n) {
    std::vector<std::uint8_t> out(n);
    for (std::size_t i = 0; i < n; ++i) out[n - 1 - i] = static_cast<std::uint8_t>(value >> (8 * i));
    return out;
}

std::uint64_t read_be(const fs::path& path, std::uint64_t offset, std::size_t n) {
    std::ifstream f(path, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<std::uint8_t>(f.get());
    REQUIRE(f.good());
    return v;
}

/// File offset of the first L2 entry of the first allocated L2 table, and that table's offset.
std::pair<std::uint64_t, std::uint64_t> first_l2(const fs::path& path) {
    const std::uint64_t l1 = read_be(path, 40, 8);
    const std::uint64_t l2 = read_be(path, l1, 8) & 0x00fffffffffffe00ull;
    REQUIRE(l2 != 0);
    return {l1, l2};
}

}  // namespace

TEST_CASE("qcow2 images made by qemu-img convert read and map like qemu", "[image][qcow2]") {
    require_qemu();
    const test::WorkDir dir("convert");
    const fs::path raw = standard_raw(dir);
    struct Case {
        std::string name;
        std::vector<std::string> options;
        std::uint64_t granule;
    };
    const std::vector<Case> cases = {
        {"plain", {}, 64 * KiB},
        {"compressed", {"-c"}, 64 * KiB},
        {"v2", {"-o", "compat=0.10"}, 64 * KiB},
        {"v2-compressed", {"-c", "-o", "compat=0.10"}, 64 * KiB},
        {"cluster-4k", {"-o", "cluster_size=4K"}, 4 * KiB},
        {"cluster-512", {"-o", "cluster_size=512"}, 512},
        {"cluster-2m", {"-o", "cluster_size=2M"}, 2 * MiB},
        {"compressed-4k", {"-c", "-o", "cluster_size=4K"}, 4 * KiB},
        {"extended-l2", {"-o", "extended_l2=on,cluster_size=128K"}, 4 * KiB},
        {"extended-l2-16k", {"-o", "extended_l2=on,cluster_size=16K"}, 512},
        {"extended-l2-compressed", {"-c", "-o", "extended_l2=on,cluster_size=64K"}, 2 * KiB},
        {"preallocated-metadata", {"-o", "preallocation=metadata"}, 64 * KiB},
    };
    for (const Case& c : cases) {
        SECTION(c.name) {
            const fs::path image = convert(raw, dir / (c.name + ".qcow2"), c.options);
            const auto disk = check_image(image, 1, c.granule);
            CHECK(disk->size() == kDiskSize);
            // Stored data: everything written except the explicit zeros, at granule size.
            CHECK(disk->layers()[0].allocated_bytes() > 10 * MiB);
        }
    }
}

TEST_CASE("qcow2 compressed clusters have no file offset and decompress", "[image][qcow2]") {
    require_qemu();
    const test::WorkDir dir("compressed");
    const fs::path image = convert(standard_raw(dir), dir / "c.qcow2", {"-c"});
    const auto layer = open_qcow2(image.string());
    // The text at the start compresses: a Data run without a file offset.
    const Mapping text = layer->map(0);
    CHECK(text.state == Allocation::Data);
    CHECK_FALSE(text.file_offset);
    // Random data does not, so qemu stores it plainly: contiguous in the file.
    const Mapping random = layer->map(10 * MiB);
    CHECK(random.state == Allocation::Data);
    CHECK(random.file_offset);

    // Small reads inside one compressed cluster, out of order.
    const auto disk = open_chain(image.string());
    std::vector<std::byte> whole(64 * KiB), part(100);
    disk->read(3 * MiB, whole);
    for (const std::uint64_t at : {std::uint64_t{60000}, std::uint64_t{7}, std::uint64_t{32768}}) {
        disk->read(3 * MiB + at, part);
        CHECK(std::equal(part.begin(), part.end(), whole.begin() + static_cast<std::ptrdiff_t>(at)));
    }
}

TEST_CASE("qcow2 zero clusters written by qemu-io", "[image][qcow2]") {
    require_qemu();
    const test::WorkDir dir("zero");
    const fs::path raw = standard_raw(dir);
    SECTION("standard L2") {
        const fs::path image = convert(raw, dir / "z.qcow2", {});
        qemu_io(image, "qcow2", {"write -z 3M 128K",      // over stored clusters: zero flag, cluster kept
                        "write -z -u 10M 256K",  // unmapped: zero flag, no cluster
                        "write -z 20M 64K",      // over unallocated clusters
                        "write -z 1M 4K",        // part of a cluster: zeros stored as data
                        "write -z 23M 1M"});     // up to the partial last cluster
        const auto disk = check_image(image, 1, 64 * KiB);
        CHECK(boost::icl::contains(test::declared_zero(*disk)[0],
                                   ByteSet::interval_type::right_open(3 * MiB, 3 * MiB + 128 * KiB)));
        const auto layer = open_qcow2(image.string());
        CHECK(layer->map(10 * MiB).state == Allocation::Zero);
    }
    SECTION("extended L2 subclusters") {
        const fs::path image = convert(raw, dir / "zx.qcow2", {"-o", "extended_l2=on,cluster_size=128K"});
        qemu_io(image, "qcow2", {"write -z 3M 8K", "write -z 10M 132K", "write -P 0x5a 20M 4K",
                        "write -z " + at(20 * MiB + 8 * KiB) + " 4K",
                        "write -P 0x33 " + at(22 * MiB + 4 * KiB) + " 12K"});
        check_image(image, 1, 4 * KiB);
        const auto layer = open_qcow2(image.string());
        const Mapping m = layer->map(20 * MiB + 4 * KiB);
        CHECK(m.state == Allocation::Unallocated);  // allocated cluster, unallocated subcluster
        CHECK(m.length == 4 * KiB);
    }
    SECTION("after an internal snapshot, the active state is read") {
        // Clusters shared with the snapshot lose their COPIED flag; writes then copy them.
        const fs::path image = convert(raw, dir / "snap.qcow2", {});
        run_ok({"qemu-img", "snapshot", "-c", "before", image.string()});
        qemu_io(image, "qcow2", {"write -P 0x77 0 4K", "write -z 3M 64K", "write -P 0x78 " + at(11 * MiB) + " 64K"});
        check_image(image, 1, 64 * KiB);
    }
}

TEST_CASE("qcow2 backing chains of depth 2 match qemu-img map depths", "[image][qcow2][chain]") {
    require_qemu();
    const test::WorkDir dir("chain");
    const fs::path raw = standard_raw(dir);
    struct Case {
        std::string name;
        bool raw_base;
        std::vector<std::string> mid_options, top_options;
        std::uint64_t top_granule;
    };
    const std::vector<Case> cases = {
        {"qcow2 base", false, {}, {}, 64 * KiB},
        {"raw base", true, {}, {}, 64 * KiB},
        {"mixed cluster sizes", false, {"-o", "cluster_size=4K"}, {"-o", "cluster_size=256K"}, 256 * KiB},
        {"extended L2 top", false, {"-o", "compat=0.10"}, {"-o", "extended_l2=on,cluster_size=64K"}, 2 * KiB},
    };
    for (const Case& c : cases) {
        SECTION(c.name) {
            fs::path base = raw;
            if (!c.raw_base) base = convert(raw, dir / "base.qcow2", {"-c"});
            const std::string base_format = c.raw_base ? "raw" : "qcow2";
            // Relative backing names, resolved against each child's directory.
            auto create = [&](const std::string& name, const fs::path& backing, const std::string& format,
                              const std::vector<std::string>& options) {
                std::vector<std::string> argv{
                    "qemu-img", "create", "-q", "-f", "qcow2", "-b", backing.filename().string(),
                    "-F",       format};
                argv.insert(argv.end(), options.begin(), options.end());
                argv.push_back((dir / name).string());
                run_ok(argv);
                return dir / name;
            };
            const fs::path mid = create("mid.qcow2", base, base_format, c.mid_options);
            qemu_io(mid, "qcow2", {"write -P 0xab 1M 64K", "write -P 0xac " + at(4 * MiB + 512) + " 1K",
                          "write -z 3M 128K", "write -P 0xad 12M 1M"});
            const fs::path top = create("top.qcow2", mid, "qcow2", c.top_options);
            qemu_io(top, "qcow2", {"write -P 0xba " + at(1 * MiB + 4 * KiB) + " 4K",
                          "write -z " + at(12 * MiB + 256 * KiB) + " 256K", "write -P 0xbb 100K 8K",
                          "write -P 0xbc 20M 2M"});
            const auto disk = check_image(top, 3, c.top_granule);
            CHECK(disk->layers()[1].path == (dir / "mid.qcow2").string());
            CHECK(format_name(disk->layers()[2].format) == base_format);
            const auto link = open_qcow2(top.string())->parent();
            REQUIRE(link);
            CHECK(link->recorded == "mid.qcow2");
            CHECK(link->format == ImageFormat::Qcow2);
            CHECK(link->recorded_format == "qcow2");
            CHECK(link->expected_identities.empty());
        }
    }
}

TEST_CASE("qcow2 parents: --parent override, missing backing file, loops", "[image][qcow2][chain]") {
    require_qemu();
    const test::WorkDir dir("parents");
    const fs::path raw = standard_raw(dir);
    const fs::path base = convert(raw, dir / "base.qcow2", {});
    run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.qcow2", "-F", "qcow2",
            (dir / "top.qcow2").string()});
    qemu_io(dir / "top.qcow2", "qcow2", {"write -P 0x11 2M 64K"});
    const fs::path expected = dir / "expected.raw";
    run_ok({"qemu-img", "convert", "-O", "raw", (dir / "top.qcow2").string(), expected.string()});

    SECTION("absolute backing names stay absolute") {
        run_ok({"qemu-img", "rebase", "-u", "-b", fs::absolute(base).string(), "-F", "qcow2",
                (dir / "top.qcow2").string()});
        const auto link = open_qcow2((dir / "top.qcow2").string())->parent();
        REQUIRE(link);
        CHECK(link->candidates == std::vector<std::string>{fs::absolute(base).string()});
        CHECK(open_chain((dir / "top.qcow2").string())->layers().size() == 2);
    }
    SECTION("a moved base is missing, and --parent supplies it") {
        const fs::path moved = dir / "elsewhere";
        fs::create_directories(moved);
        fs::rename(base, moved / "renamed.qcow2");
        std::string message;
        CHECK(kind_of([&] { (void)open_chain((dir / "top.qcow2").string()); }, &message) ==
              ErrorKind::NotFound);
        CHECK(message.find("base.qcow2") != std::string::npos);
        const auto disk = open_chain((dir / "top.qcow2").string(), {{0, "base.qcow2", (moved / "renamed.qcow2").string()}});
        REQUIRE(disk->layers().size() == 2);
        CHECK(disk->layers()[1].path == (moved / "renamed.qcow2").string());
        // Same bytes as before the move.
        std::ifstream in(expected, std::ios::binary);
        std::vector<char> theirs(disk->size());
        in.read(theirs.data(), static_cast<std::streamsize>(theirs.size()));
        std::vector<std::byte> ours(disk->size());
        disk->read(0, ours);
        CHECK(std::memcmp(ours.data(), theirs.data(), ours.size()) == 0);
    }
    SECTION("a missing grandparent says its depth, and --parent at that depth supplies it") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "top.qcow2", "-F", "qcow2",
                (dir / "leaf.qcow2").string()});
        fs::create_directory(dir / "moved");
        fs::rename(base, dir / "moved" / "base.qcow2");
        try {
            (void)open_chain((dir / "leaf.qcow2").string());
            FAIL("a chain without its base opened");
        } catch (const MissingParentError& e) {
            CHECK(e.kind() == ErrorKind::NotFound);
            CHECK(e.depth() == 2);  // leaf (0) → top (1) → base (2)
            CHECK(e.recorded() == "base.qcow2");
        }
        const auto disk = open_chain((dir / "leaf.qcow2").string(), {{2, {}, (dir / "moved" / "base.qcow2").string()}});
        REQUIRE(disk->layers().size() == 3);
        CHECK(disk->layers()[1].path == (dir / "top.qcow2").string());
        CHECK(disk->layers()[2].path == (dir / "moved" / "base.qcow2").string());
    }
    SECTION("a loop of two files") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "b.qcow2", "-F", "qcow2", "-u",
                (dir / "a.qcow2").string(), "24M"});
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", (dir / "b.qcow2").string(), "24M"});
        run_ok({"qemu-img", "rebase", "-u", "-b", "a.qcow2", "-F", "qcow2", (dir / "b.qcow2").string()});
        std::string message;
        CHECK(kind_of([&] { (void)open_chain((dir / "a.qcow2").string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message.find("loop") != std::string::npos);
    }
    SECTION("a file backing itself") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "self.qcow2", "-F", "qcow2", "-u",
                (dir / "self.qcow2").string(), "24M"});
        CHECK(kind_of([&] { (void)open_chain((dir / "self.qcow2").string()); }) == ErrorKind::Corrupt);
    }
    SECTION("a missing backing file is named") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "../gone/missing-base.qcow2", "-F", "qcow2",
                "-u", (dir / "orphan.qcow2").string(), "24M"});
        std::string message;
        CHECK(kind_of([&] { (void)open_chain((dir / "orphan.qcow2").string()); }, &message) ==
              ErrorKind::NotFound);
        CHECK(message.find("../gone/missing-base.qcow2") != std::string::npos);
        const auto link = open_qcow2((dir / "orphan.qcow2").string())->parent();
        REQUIRE(link);
        CHECK(link->candidates == std::vector<std::string>{(dir / "../gone/missing-base.qcow2").string()});
    }
    SECTION("the backing format extension is read") {
        const auto layer = open_qcow2((dir / "top.qcow2").string());
        const auto* q = dynamic_cast<const Qcow2Layer*>(layer.get());
        REQUIRE(q);
        CHECK(q->header().backing_format == std::optional<std::string>("qcow2"));
        CHECK(q->header().backing_file == std::optional<std::string>("base.qcow2"));
    }
}

TEST_CASE("qcow2 parents are opened as their recorded backing format", "[image][qcow2][chain]") {
    require_qemu();
    const test::WorkDir dir("backing-format");

    SECTION("a raw base that starts with a qcow2 header is read as raw") {
        // Guest data that happens to begin with a valid qcow2 header (a small image's first
        // 64 KiB), over the standard layout elsewhere.
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", (dir / "small.qcow2").string(), "1M"});
        const fs::path base = dir / "base.raw";
        make_raw(base, kDiskSize, kLayout);
        {
            std::vector<char> head(64 * KiB);
            std::ifstream in(dir / "small.qcow2", std::ios::binary);
            in.read(head.data(), static_cast<std::streamsize>(head.size()));
            REQUIRE(in.gcount() == static_cast<std::streamsize>(head.size()));
            std::fstream out(base, std::ios::binary | std::ios::in | std::ios::out);
            out.write(head.data(), static_cast<std::streamsize>(head.size()));
            REQUIRE(out.good());
        }
        REQUIRE(sniff_format(base.string()) == ImageFormat::Qcow2);
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.raw", "-F", "raw",
                (dir / "child.qcow2").string()});
        qemu_io(dir / "child.qcow2", "qcow2", {"write -P 0x5a 128K 64K", "write -P 0x5b 4M 8K"});

        const auto disk = check_image(dir / "child.qcow2", 2, 64 * KiB);
        CHECK(disk->size() == kDiskSize);
        CHECK(disk->layers()[1].path == base.string());
        CHECK(format_name(disk->layers()[1].format) == "raw");
        // --parent replaces the path, and the recorded format still decides how it is read.
        const fs::path copy = dir / "copy.raw";
        fs::copy_file(base, copy);
        const auto given = open_chain((dir / "child.qcow2").string(), {{0, "base.raw", copy.string()}});
        REQUIRE(given->layers().size() == 2);
        CHECK(format_name(given->layers()[1].format) == "raw");
        CHECK(given->size() == kDiskSize);
    }
    SECTION("a base recorded as qcow2 whose content is raw is refused") {
        const fs::path base = convert(standard_raw(dir), dir / "base.qcow2", {});
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.qcow2", "-F", "qcow2",
                (dir / "child.qcow2").string()});
        CHECK(open_chain((dir / "child.qcow2").string())->layers().size() == 2);
        fs::remove(base);
        fs::copy_file(standard_raw(dir), base);
        std::string message;
        CHECK(kind_of([&] { (void)open_chain((dir / "child.qcow2").string()); }, &message) ==
              ErrorKind::Corrupt);
        INFO(message);
        CHECK(message.find("parent " + base.string() + " of " + (dir / "child.qcow2").string() +
                           " is recorded as qcow2 but its content is raw") != std::string::npos);
        // --parent overrides the path, not the check.
        message.clear();
        CHECK(kind_of([&] { (void)open_chain((dir / "child.qcow2").string(), {{1, {}, standard_raw(dir).string()}}); },
                      &message) == ErrorKind::Corrupt);
        CHECK(message.find("is recorded as qcow2 but its content is raw") != std::string::npos);
    }
    SECTION("qemu's format names") {
        const std::vector<std::pair<std::string, ImageFormat>> names = {
            {"raw", ImageFormat::Raw},   {"qcow2", ImageFormat::Qcow2},
            {"vmdk", ImageFormat::Vmdk}, {"vpc", ImageFormat::Vhd},
            {"vhdx", ImageFormat::Vhdx},
        };
        for (const auto& [name, format] : names) {
            INFO(name);
            const fs::path child = dir / (name + "-child.qcow2");
            run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.img", "-F", name, "-u",
                    child.string(), "24M"});
            const auto link = open_qcow2(child.string())->parent();
            REQUIRE(link);
            CHECK(link->format == format);
            CHECK(link->recorded_format == name);
        }
        // Without the extension (qemu-img no longer writes such files: its type is renamed
        // to one nobody knows) the parent is recognised by its content.
        const fs::path base = convert(standard_raw(dir), dir / "base.qcow2", {});
        const fs::path legacy = dir / "legacy.qcow2";
        run_ok(
            {"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.qcow2", "-F", "qcow2", legacy.string()});
        std::uint64_t extension = 72;
        while (extension < 4096 && read_be(legacy, extension, 4) != 0xe2792aca) extension += 4;
        REQUIRE(extension < 4096);
        patch(legacy, extension, be(0x67756672, 4));
        const auto link = open_qcow2(legacy.string())->parent();
        REQUIRE(link);
        REQUIRE_FALSE(dynamic_cast<const Qcow2Layer&>(*open_qcow2(legacy.string())).header().backing_format);
        CHECK_FALSE(link->format);
        CHECK(link->recorded_format.empty());
        const auto disk = open_chain(legacy.string());
        REQUIRE(disk->layers().size() == 2);
        CHECK(format_name(disk->layers()[1].format) == "qcow2");
    }
    SECTION("a backing format guestfrag does not read is unsupported") {
        for (const std::string name : {"qed", "vdi", "luks"}) {
            INFO(name);
            const fs::path child = dir / (name + "-child.qcow2");
            run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base." + name, "-F", name, "-u",
                    child.string(), "24M"});
            const auto link = open_qcow2(child.string())->parent();
            REQUIRE(link);
            CHECK_FALSE(link->format);
            CHECK(link->recorded_format == name);
            // Refused for the format even though the base is also missing.
            std::string message;
            CHECK(kind_of([&] { (void)open_chain(child.string()); }, &message) == ErrorKind::Unsupported);
            CHECK(message == child.string() + " records its parent as a " + name +
                                 " image, which guestfrag does not read");
        }
    }
}

TEST_CASE("qcow2 features guestfrag does not read are refused clearly", "[image][qcow2][bad]") {
    require_qemu();
    const test::WorkDir dir("unsupported");
    const fs::path image = dir / "x.qcow2";
    std::string message;
    SECTION("LUKS encryption") {
        const std::vector<std::string> create{"qemu-img", "create", "-q", "-f", "qcow2", "--object",
                                              "secret,id=s0,data=x", "-o", "encrypt.format=luks,encrypt.key-secret=s0",
                                              image.string(), "4M"};
        // qemu-img times PBKDF2 with the thread's CPU clock to choose its iteration count and
        // gives up when that clock does not advance ("Unable to get accurate CPU usage"), as
        // on machines whose CPU accounting is coarse. There the header field qemu would have
        // written (crypt_method 2, LUKS) is set on a plain image instead: the refusal rests on
        // that field alone.
        const test::CommandResult created = test::run(create);
        if (created.status != 0 && created.err.find("Unable to get accurate CPU usage") != std::string::npos) {
            WARN("qemu-img could not time PBKDF2 here: crypt_method set by hand");
            run_ok({"qemu-img", "create", "-q", "-f", "qcow2", image.string(), "4M"});
            patch(image, 32, be(2, 4));
        } else {
            INFO(created.err);
            REQUIRE(created.status == 0);
        }
        REQUIRE(read_be(image, 32, 4) == 2);
        CHECK(kind_of([&] { (void)open_qcow2(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "qcow2: encrypted images are not supported");
    }
    SECTION("legacy AES encryption") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "--object", "secret,id=s0,data=x", "-o",
                "encryption=on,encrypt.key-secret=s0", image.string(), "4M"});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "qcow2: encrypted images are not supported");
    }
    SECTION("external data file") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-o", "data_file=" + (dir / "data.raw").string(),
                image.string(), "4M"});
        CHECK(kind_of([&] { (void)open_qcow2(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "qcow2: external data files are not supported");
    }
    SECTION("zstd compression") {
        run_ok(
            {"qemu-img", "create", "-q", "-f", "qcow2", "-o", "compression_type=zstd", image.string(), "4M"});
        CHECK(kind_of([&] { (void)open_qcow2(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "qcow2: zstd compression is not supported");
    }
    SECTION("unknown incompatible feature") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", image.string(), "4M"});
        patch(image, 72, be(std::uint64_t{1} << 9, 8));
        CHECK(kind_of([&] { (void)open_qcow2(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "qcow2: incompatible feature bit 9 is not supported");
    }
    SECTION("qcow version 1 and future versions") {
        run_ok({"qemu-img", "create", "-q", "-f", "qcow", image.string(), "4M"});
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "qcow (version 1) images are not supported");
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", image.string(), "4M"});
        patch(image, 4, be(4, 4));
        CHECK(kind_of([&] { (void)open_qcow2(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message == "qcow2: version 4 is not supported");
    }
}

TEST_CASE("qcow2 header flags: dirty is readable, corrupt is refused", "[image][qcow2][bad]") {
    require_qemu();
    const test::WorkDir dir("flags");
    const fs::path image = convert(standard_raw(dir), dir / "f.qcow2", {});
    const std::uint64_t features = read_be(image, 72, 8);
    SECTION("dirty") {
        patch(image, 72, be(features | 1, 8));
        const auto layer = open_qcow2(image.string());
        CHECK(dynamic_cast<const Qcow2Layer&>(*layer).header().dirty);
        check_bytes(*open_chain(image.string()), image);
    }
    SECTION("corrupt") {
        patch(image, 72, be(features | 2, 8));
        std::string message;
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "qcow2 image is marked corrupt");
    }
}

TEST_CASE("qcow2 damaged tables are corrupt, named, and never over-allocate", "[image][qcow2][bad]") {
    require_qemu();
    const test::WorkDir dir("damaged");
    const fs::path image = convert(standard_raw(dir), dir / "d.qcow2", {});
    const auto [l1, l2] = first_l2(image);
    std::string message;
    const auto expect_corrupt = [&](const std::string& needle) {
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Corrupt);
        INFO(message);
        CHECK(message.find(needle) != std::string::npos);
    };
    SECTION("file truncated inside the L2 table") {
        fs::resize_file(image, l2 + 100);
        expect_corrupt("L1 entry 0: L2 table at offset " + std::to_string(l2) +
                       " lies past the end of the file");
    }
    SECTION("file truncated inside the data") {
        fs::resize_file(image, fs::file_size(image) / 2);
        expect_corrupt("lies past the end of the file");
    }
    SECTION("L1 entry past the end of the file") {
        patch(image, l1, be((std::uint64_t{1} << 40) | (std::uint64_t{1} << 63), 8));
        expect_corrupt("L1 entry 0: L2 table at offset 1099511627776 lies past the end of the file");
    }
    SECTION("L1 entry not cluster aligned") {
        patch(image, l1, be(l2 + 512, 8));
        expect_corrupt("L1 entry 0: L2 table at offset " + std::to_string(l2 + 512) +
                       " is not cluster aligned");
    }
    SECTION("L2 entry past the end of the file") {
        patch(image, l2, be((std::uint64_t{1} << 50) | (std::uint64_t{1} << 63), 8));
        expect_corrupt("L2 entry for virtual offset 0: data at offset 1125899906842624 lies past the end");
    }
    SECTION("L2 entry not cluster aligned") {
        patch(image, l2, be(read_be(image, l2, 8) + 4096, 8));
        expect_corrupt("L2 entry for virtual offset 0: host offset");
    }
    SECTION("absurd virtual size") {
        patch(image, 24, be(std::uint64_t{1} << 60, 8));
        CHECK(kind_of([&] { (void)open_chain(image.string()); }, &message) == ErrorKind::Unsupported);
        CHECK(message.find("64 TiB") != std::string::npos);
    }
    SECTION("virtual size larger than the L1 table covers") {
        patch(image, 24, be(std::uint64_t{1} << 40, 8));
        expect_corrupt("L1 table has 1 entries, the virtual size needs 2048");
    }
    SECTION("huge L1 table") {
        patch(image, 36, be(0xffffffff, 4));
        expect_corrupt("L1 table too large");
    }
    SECTION("L1 table past the end of the file") {
        patch(image, 40, be(std::uint64_t{1} << 45, 8));
        expect_corrupt("L1 table (offset 35184372088832, 1 entries) lies past the end of the file");
    }
    SECTION("cluster bits out of range") {
        patch(image, 20, be(30, 4));
        expect_corrupt("cluster_bits 30 out of range");
    }
    SECTION("header shorter than its header length") {
        patch(image, 100, be(1 << 20, 4));
        expect_corrupt("header length");
    }
    SECTION("backing file name outside the header cluster") {
        patch(image, 8, be(65530, 8));
        patch(image, 16, be(100, 4));
        expect_corrupt("backing file name at offset 65530 lies outside the header cluster");
    }
    SECTION("header extension running past the header area") {
        patch(image, 104 + 8, be(0x6803f857, 4));  // after the compression type padding
        patch(image, 104 + 12, be(0x7fffffff, 4));
        expect_corrupt("runs past the header area");
    }
    SECTION("a file shorter than a header") {
        fs::resize_file(image, 50);
        expect_corrupt("too short");
    }
}

TEST_CASE("qcow2 damaged compressed data is corrupt when read", "[image][qcow2][bad]") {
    require_qemu();
    const test::WorkDir dir("badzip");
    const fs::path image = convert(standard_raw(dir), dir / "c.qcow2", {"-c"});
    const auto [l1, l2] = first_l2(image);
    (void)l1;
    const std::uint64_t entry = read_be(image, l2, 8);
    REQUIRE((entry >> 62 & 1) == 1);  // the text cluster at 0 is compressed
    const std::uint64_t host = entry & ((std::uint64_t{1} << 54) - 1);
    patch(image, host, std::vector<std::uint8_t>(64, 0xff));
    const auto disk = open_chain(image.string());  // mapping does not decompress
    std::vector<std::byte> buf(512);
    std::string message;
    CHECK(kind_of([&] { disk->read(0, buf); }, &message) == ErrorKind::Corrupt);
    CHECK(message.find("compressed cluster for virtual offset 0") != std::string::npos);
}

TEST_CASE("qcow2 entry decoding follows the specification", "[image][qcow2][unit]") {
    Qcow2Header h;
    h.version = 3;
    h.cluster_bits = 16;
    const std::uint64_t file = std::uint64_t{1} << 30;
    SECTION("compressed descriptor split at 62 - (cluster_bits - 8)") {
        const std::uint64_t entry = (std::uint64_t{1} << 62) | (std::uint64_t{3} << 54) | 0x12345;
        const Qcow2Cluster c = decode_qcow2_l2(h, entry, 0, 0, file);
        CHECK(c.compressed());
        CHECK(c.host_offset == 0x12345);
        CHECK(c.compressed_bytes == 4 * 512 - 0x145);
        CHECK(c.state(0) == Allocation::Data);
    }
    SECTION("zero flag with and without a preallocated cluster; COPIED ignored") {
        CHECK(decode_qcow2_l2(h, 1, 0, 0, file).state(0) == Allocation::Zero);
        CHECK(decode_qcow2_l2(h, (std::uint64_t{1} << 63) | 0x30000 | 1, 0, 0, file).state(0) ==
              Allocation::Zero);
        CHECK(decode_qcow2_l2(h, (std::uint64_t{1} << 63) | 0x30000, 0, 0, file).state(0) ==
              Allocation::Data);
        CHECK(decode_qcow2_l2(h, 0, 0, 0, file).state(0) == Allocation::Unallocated);
        h.version = 2;
        CHECK(kind_of([&] { (void)decode_qcow2_l2(h, 1, 0, 0, file); }) == ErrorKind::Corrupt);
    }
    SECTION("extended L2 bitmaps") {
        h.extended_l2 = true;
        const std::uint64_t bitmap = (std::uint64_t{0b1100} << 32) | 0b0011;
        const Qcow2Cluster c = decode_qcow2_l2(h, 0x20000, bitmap, 0, file);
        CHECK(c.state(0) == Allocation::Data);
        CHECK(c.state(1) == Allocation::Data);
        CHECK(c.state(2) == Allocation::Zero);
        CHECK(c.state(4) == Allocation::Unallocated);
        // The standard zero flag is not used with subclusters.
        CHECK(decode_qcow2_l2(h, 1, 0, 0, file).state(0) == Allocation::Unallocated);
        CHECK(kind_of([&] { (void)decode_qcow2_l2(h, 0x20000, 0x100000001ull, 0, file); }) ==
              ErrorKind::Corrupt);
        CHECK(kind_of([&] { (void)decode_qcow2_l2(h, 0, 1, 0, file); }) == ErrorKind::Corrupt);
        CHECK(decode_qcow2_l2(h, 0, std::uint64_t{0xffffffff} << 32, 0, file).state(31) == Allocation::Zero);
    }
    SECTION("inflate needs the whole cluster") {
        std::vector<std::byte> out(16);
        const std::vector<std::byte> garbage(32, std::byte{0xff});
        CHECK_FALSE(qcow2_inflate(garbage, out));
        // A stored (uncompressed) deflate block holding 4 bytes: too short for 16.
        const std::vector<std::byte> stored = {std::byte{1},    std::byte{4},    std::byte{0},
                                               std::byte{0xfb}, std::byte{0xff}, std::byte{1},
                                               std::byte{2},    std::byte{3},    std::byte{4}};
        CHECK_FALSE(qcow2_inflate(stored, out));
        std::vector<std::byte> four(4);
        CHECK(qcow2_inflate(stored, four));
        CHECK(four[3] == std::byte{4});
    }
}

TEST_CASE("qcow2 maps a large, mostly empty disk in few calls", "[image][qcow2]") {
    require_qemu();
    const test::WorkDir dir("large");
    const fs::path image = dir / "big.qcow2";
    run_ok({"qemu-img", "create", "-q", "-f", "qcow2", image.string(), "2T"});
    qemu_io(image, "qcow2", {"write -P 1 0 64K", "write -P 2 1T 1M", "write -z 1536G 64K",
                    "write -P 3 " + at((std::uint64_t{2} << 40) - 64 * KiB) + " 64K"});
    const auto layer = open_qcow2(image.string());
    std::size_t calls = 0;
    for (std::uint64_t at = 0; at < layer->virtual_size(); ++calls) at += layer->map(at).length;
    CHECK(calls <= 16);
    const auto disk = open_chain(image.string());
    check_allocation(*disk, image);
    CHECK(disk->layers()[0].allocated_bytes() == 64 * KiB + 1 * MiB + 64 * KiB);
}

TEST_CASE("qcow2 serves concurrent readers", "[image][qcow2][threads]") {
    require_qemu();
    const test::WorkDir dir("threads");
    const fs::path image = convert(standard_raw(dir), dir / "t.qcow2", {"-c", "-o", "cluster_size=4K"});
    const fs::path raw = dir / "t.raw";
    run_ok({"qemu-img", "convert", "-O", "raw", image.string(), raw.string()});
    std::vector<char> expected(kDiskSize);
    std::ifstream(raw, std::ios::binary).read(expected.data(), static_cast<std::streamsize>(expected.size()));
    const auto disk = open_chain(image.string());
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            std::uint64_t state = t + 1;
            std::vector<std::byte> buf(20000);
            for (int i = 0; i < 300; ++i) {
                state = mix(state);
                const std::uint64_t offset = state % (kDiskSize - buf.size());
                disk->read(offset, buf);
                if (std::memcmp(buf.data(), expected.data() + offset, buf.size()) != 0) ++bad;
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(bad == 0);
}

TEST_CASE("qcow2 real image made by Windows tools reads like qemu", "[image][qcow2][testdata]") {
    require_qemu();
    const fs::path path = test::testdata("windows_volume.qcow2");
    const auto disk = check_image(path, 1, 64 * KiB);
    CHECK(disk->size() == 35913728);
    const auto layer = open_qcow2(path.string());
    CHECK_FALSE(layer->parent());
    CHECK_FALSE(layer->identity());
}
