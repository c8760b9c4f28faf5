// SPDX-License-Identifier: GPL-2.0-or-later
// Hostile containers of a few KiB to MiB whose tables claim far more than the file holds
// (docs/design.md "Limits on hostile sizes"). Each is built here, then opened in process
// (exact error or exact allocation figures) and analysed by the CLI as a child process
// whose peak resident set size over its own footprint must stay within kInputRssKib.
// Before the readers refused these, the same files took 0.5-6 GB.
#include <catch2/catch.hpp>

#include <fcntl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/apply/qcow2_writer.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/image/source_opener.hpp"
#include "core/image/unique_fd.hpp"
#include "core/io/sanitizer.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/vhd_writer.hpp"
#include "support/vmdk_writer.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using Bytes = std::vector<std::byte>;
using guestfrag::test::kind_of;

namespace {

/// Resident memory the CLI may add over its own footprint on every hostile file (what it
/// takes on an empty one, which grows with the binary). These take ~10-30 MB in a release
/// build; an ASan build adds redzones, shadow and its allocator quarantine to each byte.
constexpr long kInputRssKib = 256 * 1024;

void put_be(Bytes& b, std::size_t at, std::uint64_t value, int bytes) {
    for (int i = bytes - 1; i >= 0; --i, value >>= 8) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(value);
}

void put_le(Bytes& b, std::size_t at, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i, value >>= 8) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(value);
}

void write_bytes(const fs::path& path, const Bytes& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// Writes `bytes` at `offset` of an existing file, leaving what lies between as a hole.
void write_at(const fs::path& path, std::uint64_t offset, const Bytes& bytes) {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(offset));
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

constexpr std::uint64_t kQcow2Cluster = 512;  // cluster_bits 9: an L2 table of 64 entries
constexpr std::uint64_t kCopied = std::uint64_t{1} << 63;

/// A qcow2 v3 image with 512-byte clusters and `l1_entries` L1 entries (64 clusters each).
/// shared_l2: every L1 entry points at one L2 table whose 64 entries point at 64 data
/// clusters in reverse order (64 host extents per table). Otherwise each L1 entry has an
/// L2 table of its own, and all of their entries point at one data cluster.
Bytes qcow2_image(std::uint64_t l1_entries, bool shared_l2) {
    const std::uint64_t l1_offset = kQcow2Cluster;
    const std::uint64_t l1_bytes = (l1_entries * 8 + kQcow2Cluster - 1) / kQcow2Cluster * kQcow2Cluster;
    const std::uint64_t l2_offset = l1_offset + l1_bytes;
    const std::uint64_t tables = shared_l2 ? 1 : l1_entries;
    const std::uint64_t data_offset = l2_offset + tables * kQcow2Cluster;
    const std::uint64_t data_clusters = shared_l2 ? 64 : 1;
    Bytes f(static_cast<std::size_t>(data_offset + data_clusters * kQcow2Cluster));
    put_be(f, 0, 0x514649fb, 4);
    put_be(f, 4, 3, 4);                                // version
    put_be(f, 20, 9, 4);                               // cluster_bits
    put_be(f, 24, l1_entries * 64 * kQcow2Cluster, 8);  // virtual size
    put_be(f, 36, l1_entries, 4);
    put_be(f, 40, l1_offset, 8);
    put_be(f, 96, 4, 4);    // refcount_order
    put_be(f, 100, 104, 4);  // header_length
    for (std::uint64_t i = 0; i < l1_entries; ++i) {
        const std::uint64_t table = l2_offset + (shared_l2 ? 0 : i * kQcow2Cluster);
        put_be(f, static_cast<std::size_t>(l1_offset + i * 8), table | kCopied, 8);
    }
    for (std::uint64_t t = 0; t < tables; ++t)
        for (std::uint64_t e = 0; e < 64; ++e) {
            const std::uint64_t data = data_offset + (shared_l2 ? (63 - e) * kQcow2Cluster : 0);
            put_be(f, static_cast<std::size_t>(l2_offset + t * kQcow2Cluster + e * 8), data | kCopied, 8);
        }
    return f;
}

/// A chain of `depth` qcow2 v3 layers "0.qcow2" (the base) … in `dir`, each backed by the
/// one before it: 512-byte clusters and an L1 table of 4 Mi entries (32 MiB, qemu's
/// largest) that is all zero, over a 128 GiB disk. The tables are holes: they read as the
/// zeros qemu-img writes out in full, at no cost in disk space. Returns the top layer.
fs::path empty_l1_chain(const fs::path& dir, int depth) {
    constexpr std::uint64_t kL1Entries = std::uint64_t{1} << 22;
    for (int layer = 0; layer < depth; ++layer) {
        Bytes header(static_cast<std::size_t>(kQcow2Cluster));
        put_be(header, 0, 0x514649fb, 4);
        put_be(header, 4, 3, 4);  // version
        const std::string backing = std::to_string(layer - 1) + ".qcow2";
        if (layer > 0) {
            put_be(header, 8, 112, 8);  // backing_file_offset: after the header
            put_be(header, 16, backing.size(), 4);
            std::memcpy(header.data() + 112, backing.data(), backing.size());
        }
        put_be(header, 20, 9, 4);                                // cluster_bits
        put_be(header, 24, kL1Entries * 64 * kQcow2Cluster, 8);  // virtual size
        put_be(header, 36, kL1Entries, 4);
        put_be(header, 40, kQcow2Cluster, 8);  // L1 offset
        put_be(header, 96, 4, 4);              // refcount_order
        put_be(header, 100, 104, 4);           // header_length
        const fs::path path = dir / (std::to_string(layer) + ".qcow2");
        write_bytes(path, header);
        fs::resize_file(path, kQcow2Cluster + kL1Entries * 8);
    }
    return dir / (std::to_string(depth - 1) + ".qcow2");
}

/// A hosted sparse extent (4 KiB grains, 512-entry grain tables) of `tables` grain
/// tables' worth of capacity whose directory entries all point at one grain table, which
/// stores every other grain, in reverse file order.
Bytes vmdk_sparse_extent(std::uint64_t tables) {
    constexpr std::uint64_t kGrainSectors = 8, kGtes = 512;
    const std::uint64_t gd_sectors = (tables * 4 + 511) / 512;
    const std::uint64_t gd = 1, gt = gd + gd_sectors, grains = gt + 4;
    Bytes f(static_cast<std::size_t>((grains + kGtes / 2 * kGrainSectors) * 512));
    put_le(f, 0, 0x564d444b, 4);  // "KDMV"
    put_le(f, 4, 1, 4);            // version
    put_le(f, 12, tables * kGtes * kGrainSectors, 8);
    put_le(f, 20, kGrainSectors, 8);
    put_le(f, 44, kGtes, 4);
    put_le(f, 56, gd, 8);
    put_le(f, 64, grains, 8);  // overhead
    for (std::uint64_t i = 0; i < tables; ++i) put_le(f, static_cast<std::size_t>(gd * 512 + i * 4), gt, 4);
    for (std::uint64_t e = 0; e < kGtes; e += 2)
        put_le(f, static_cast<std::size_t>(gt * 512 + e * 4), grains + (kGtes / 2 - 1 - e / 2) * kGrainSectors, 4);
    return f;
}

constexpr std::uint64_t kVhdBlock = 2u << 20;

/// A differencing VHD child of `blocks` 2 MiB blocks whose sector bitmaps all read
/// 0xaa (every other sector in the child: 2,048 runs per block), and its dynamic parent.
/// sparse: only the bitmaps are written and the data areas stay holes in the host file;
/// otherwise the data areas are written too.
void write_alternating_vhd(const fs::path& child, const fs::path& parent, std::uint64_t blocks, bool sparse) {
    const test::VhdGuid parent_id{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    test::VhdSpec spec;
    spec.disk_type = 3;
    spec.virtual_size = blocks * kVhdBlock;
    spec.unique_id = parent_id;
    test::write_vhd(parent, spec);

    const std::uint64_t table = 1536;
    const std::uint64_t first_block = table + (blocks * 4 + 511) / 512 * 512;
    const std::uint64_t stride = 512 + kVhdBlock;  // bitmap sector, then the block's data
    const std::uint64_t footer_at = first_block + blocks * stride;
    Bytes footer(512);
    std::memcpy(footer.data(), "conectix", 8);
    put_be(footer, 8, 2, 4);
    put_be(footer, 12, 0x00010000, 4);
    put_be(footer, 16, 512, 8);  // dynamic header
    put_be(footer, 40, blocks * kVhdBlock, 8);
    put_be(footer, 48, blocks * kVhdBlock, 8);
    put_be(footer, 60, 4, 4);  // differencing
    footer[68] = std::byte{0x42};
    Bytes head = footer;
    head.resize(table + blocks * 4);
    std::memcpy(head.data() + 512, "cxsparse", 8);
    put_be(head, 512 + 8, ~std::uint64_t{0}, 8);
    put_be(head, 512 + 16, table, 8);
    put_be(head, 512 + 24, 0x00010000, 4);
    put_be(head, 512 + 28, blocks, 4);
    put_be(head, 512 + 32, kVhdBlock, 4);
    for (std::size_t i = 0; i < parent_id.size(); ++i) head[512 + 40 + i] = static_cast<std::byte>(parent_id[i]);
    for (std::uint64_t b = 0; b < blocks; ++b)
        put_be(head, static_cast<std::size_t>(table + b * 4), (first_block + b * stride) / 512, 4);
    write_bytes(child, head);
    Bytes block(static_cast<std::size_t>(sparse ? 512 : stride), std::byte{0x5a});
    std::fill(block.begin(), block.begin() + 512, std::byte{0xaa});
    for (std::uint64_t b = 0; b < blocks; ++b) write_at(child, first_block + b * stride, block);
    write_at(child, footer_at, footer);
    test::vhd_fix_checksums(child);
}

/// A parent given as depth 1, as `--parent 1=PATH` gives it.
OpenOptions with_parent(const fs::path& parent) {
    OpenOptions options;
    options.parents.push_back(ParentOverride{1, "", parent.string()});
    return options;
}

std::string open_error(const fs::path& image, const OpenOptions& options = {}) {
    std::string message;
    CHECK(kind_of([&] { (void)open_image(image.string(), options); }, &message) == ErrorKind::Corrupt);
    return message;
}

/// The CLI's analysis of `image` fails with exit status 2, one line holding `fragment`,
/// within the memory bound.
void check_cli_refuses(const fs::path& image, const std::vector<std::string>& extra, const std::string& fragment) {
    std::vector<std::string> args{"analyze", image.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = test::run_cli_measured(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(fragment) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.peak_rss_kib > 0);
    CHECK(r.input_rss_kib <= kInputRssKib);
}

}  // namespace

TEST_CASE("qcow2: L1 entries sharing one L2 table are refused before mapping", "[hostile][memory][qcow2]") {
    test::WorkDir dir("memory_qcow2_shared");
    const fs::path image = dir.path() / "shared.qcow2";
    // 131,072 L1 entries (1 MiB) over a 4 GiB disk: 8 Mi separately placed clusters when mapped.
    write_bytes(image, qcow2_image(131072, true));
    const std::uint64_t l2_offset = 512 + 131072 * 8;
    CHECK(open_error(image) == "qcow2: L1 entries 0 and 1 both point at the L2 table at offset " +
                                   std::to_string(l2_offset));
    check_cli_refuses(image, {}, "L1 entries 0 and 1 both point at the L2 table");
}

TEST_CASE("qcow2: L2 tables that all point at one data cluster exceed what the file can back",
          "[hostile][memory][qcow2]") {
    // 8,192 distinct L2 tables, 524,288 entries, one 512-byte data cluster: a 4.2 MiB file
    // claiming 256 MiB of data in 524,288 separately placed runs.
    const Bytes bytes = qcow2_image(8192, false);
    MemoryOpener opener;
    opener.add("one-cluster.qcow2", bytes);
    std::string message;
    CHECK(kind_of([&] { (void)open_image(opener, "one-cluster.qcow2"); }, &message) == ErrorKind::Corrupt);
    // Held bytes of a memory source are its size; the limit is 2^17 + held / 64 runs.
    const std::uint64_t limit = (std::uint64_t{1} << 17) + bytes.size() / 64;
    CHECK(message == "the layer maps to more than " + std::to_string(limit) +
                         " separately stored runs of data, more than the " + std::to_string(bytes.size()) +
                         " bytes its files hold on the host can back (its tables share or invent data)");

    test::WorkDir dir("memory_qcow2_one_cluster");
    const fs::path image = dir.path() / "one-cluster.qcow2";
    write_bytes(image, bytes);
    check_cli_refuses(image, {}, "separately stored runs of data");
}

TEST_CASE("qcow2: a chain of 63 layers with 32 MiB L1 tables of zeros costs what it holds",
          "[hostile][memory][qcow2]") {
    // Held as 32 MiB of L1 entries per layer, this chain took 2.1 GB to analyse.
    test::WorkDir dir("memory_qcow2_deep");
    const fs::path top = empty_l1_chain(dir.path(), 63);
    {
        const auto disk = open_image(top.string());
        REQUIRE(disk->layers().size() == 63);
        for (const Layer& layer : disk->layers()) CHECK(layer.allocated_bytes() == 0);
        CHECK(disk->size() == (std::uint64_t{1} << 37));
    }
    const auto r = test::run_cli_measured({"analyze", top.string()});
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("no partition table and no NTFS file system found") != std::string::npos);
    CHECK(r.peak_rss_kib > 0);
    CHECK(r.input_rss_kib <= kInputRssKib);
}

TEST_CASE("qcow2: a chain drops each layer's L2 tables once the layer is mapped", "[hostile][memory][qcow2]") {
    // Four layers of a 256 GiB disk, each storing one 64 KiB cluster in every 512 MiB: 512
    // L2 tables (32 MiB) per layer, what one layer's L2 cache holds at most. Kept after
    // mapping, the chain held 128 MiB of tables; now only the layer being mapped holds its own.
    test::WorkDir dir("memory_qcow2_l2_chain");
    constexpr std::uint64_t kSize = std::uint64_t{256} << 30;
    constexpr std::uint64_t kTables = 512;
    constexpr std::uint64_t kClustersPerTable = Qcow2OverlayWriter::kClusterSize / 8;
    const std::vector<std::byte> cluster(Qcow2OverlayWriter::kClusterSize, std::byte{0x5a});
    fs::path below;
    for (std::uint64_t layer = 0; layer < 4; ++layer) {
        const fs::path path = dir.path() / ("layer" + std::to_string(layer) + ".qcow2");
        const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644));
        REQUIRE(fd.get() >= 0);
        std::optional<Qcow2Backing> backing;
        if (layer > 0) backing = Qcow2Backing{below.filename().string(), "qcow2"};
        Qcow2OverlayWriter writer(fd.get(), path.string(), kSize, backing);
        for (std::uint64_t t = 0; t < kTables; ++t) writer.write_cluster(t * kClustersPerTable + 1 + layer, cluster);
        (void)writer.finish();
        below = path;
    }
    {
        const auto disk = open_image(below.string());
        REQUIRE(disk->layers().size() == 4);
        for (const Layer& layer : disk->layers())
            CHECK(layer.allocated_bytes() == kTables * Qcow2OverlayWriter::kClusterSize);
    }
    const auto r = test::run_cli_measured({"analyze", below.string()});
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("no partition table and no NTFS file system found") != std::string::npos);
    CHECK(r.peak_rss_kib > 0);
    // Under AddressSanitizer the caches dropped wait in its 64 MB quarantine of freed
    // memory (127 MB measured), so only the release build can tell 33 MB from 130 MB here.
#if GUESTFRAG_ADDRESS_SANITIZER
    CHECK(r.input_rss_kib <= 192 * 1024);
#else
    CHECK(r.input_rss_kib <= 80 * 1024);
#endif
}

TEST_CASE("vmdk: a descriptor naming one sparse extent file many times is refused", "[hostile][memory][vmdk]") {
    test::WorkDir dir("memory_vmdk_repeated");
    write_bytes(dir.path() / "x.vmdk", vmdk_sparse_extent(1));
    // 4,096 lines of one 2 MiB extent, the second through another name of the same file.
    std::vector<test::DescriptorExtent> lines(4096, test::DescriptorExtent(4096, "SPARSE", "x.vmdk"));
    lines[1].file = "./x.vmdk";
    const fs::path image = dir.path() / "repeated.vmdk";
    test::write_text_file(image, test::vmdk_descriptor_text(0xfffffffe, 0xffffffff, "monolithicSparse", lines));
    CHECK(open_error(image) ==
          "vmdk: extents 1 and 2 both name the sparse extent file ./x.vmdk (a sparse extent file holds one extent)");
    check_cli_refuses(image, {}, "extents 1 and 2 both name the sparse extent file");

    // The extent file itself is sound: one line naming it opens, with its 256 grains.
    lines.erase(lines.begin() + 1, lines.end());
    const fs::path single = dir.path() / "single.vmdk";
    test::write_text_file(single, test::vmdk_descriptor_text(0xfffffffe, 0xffffffff, "monolithicSparse", lines));
    const auto disk = open_image(single.string());
    REQUIRE(disk->layers().size() == 1);
    CHECK(disk->layers()[0].allocated_bytes() == 256 * 4096);
    CHECK(disk->layers()[0].host_extents.size() == 256);
}

TEST_CASE("vmdk: grain directory entries sharing one grain table are refused", "[hostile][memory][vmdk]") {
    test::WorkDir dir("memory_vmdk_shared_gt");
    // 65,536 directory entries (256 KiB) for a 128 GiB extent, all naming one table.
    const fs::path image = dir.path() / "shared-gt.vmdk";
    write_bytes(image, vmdk_sparse_extent(65536));
    const std::uint64_t table_sector = 1 + 65536 * 4 / 512;
    CHECK(open_error(image) ==
          "grain directory entries 0 and 1 both refer to the grain table " + std::to_string(table_sector));
    check_cli_refuses(image, {}, "grain directory entries 0 and 1 both refer to the grain table");
}

TEST_CASE("vhd: alternating sector bitmaps over a sparse file exceed what it holds", "[hostile][memory][vhd]") {
    test::WorkDir dir("memory_vhd_sparse");
    const fs::path child = dir.path() / "child.vhd", parent = dir.path() / "parent.vhd";
    // 2,048 blocks: 4 GiB of file of which only the bitmaps (~8 MiB of host blocks) are
    // written, claiming 4 Mi runs of one sector.
    write_alternating_vhd(child, parent, 2048, true);
    const std::string message = open_error(child, with_parent(parent));
    CHECK(message.starts_with("the layer maps to more than "));
    CHECK(message.ends_with(" bytes its files hold on the host can back (its tables share or invent data)"));
    check_cli_refuses(child, {"--parent", parent.string()}, "separately stored runs of data");
}

TEST_CASE("vhd: alternating sector bitmaps whose data the file holds are mapped exactly", "[hostile][memory][vhd]") {
    test::WorkDir dir("memory_vhd_dense");
    const fs::path child = dir.path() / "child.vhd", parent = dir.path() / "parent.vhd";
    // 72 blocks written in full (145 MiB): 147,456 runs, more than any file may have
    // without holding bytes for them, fewer than these bytes allow.
    write_alternating_vhd(child, parent, 72, false);
    const auto disk = open_image(child.string(), with_parent(parent));
    REQUIRE(disk->layers().size() == 2);
    const Layer& top = disk->layers()[0];
    CHECK(top.allocated_bytes() == 72 * kVhdBlock / 2);
    CHECK(top.host_extents.size() == 72 * 2048);
    CHECK(top.host_extents[1].virtual_offset == 1024);
    CHECK(top.host_extents[1].file_offset == 1536 + 512 + 512 + 1024);
}

TEST_CASE("vmdk: a COWD grain directory whose entries share one grain table is refused", "[hostile][memory][cowd]") {
    // Two directory entries (capacity 8,192 one-sector grains) naming the table at sector 5.
    Bytes f((5 + 32) * 512);
    put_le(f, 0, 0x44574f43, 4);  // "COWD"
    put_le(f, 4, 1, 4);            // version
    put_le(f, 8, 1, 4);            // root: no parent
    put_le(f, 12, 8192, 4);        // capacity in sectors
    put_le(f, 16, 1, 4);           // grain sectors
    put_le(f, 20, 4, 4);           // grain directory sector
    put_le(f, 24, 2, 4);           // grain directory entries
    put_le(f, 4 * 512, 5, 4);
    put_le(f, 4 * 512 + 4, 5, 4);
    MemoryOpener opener;
    opener.add("shared-delta.vmdk", f);
    std::string message;
    CHECK(kind_of([&] { (void)open_image(opener, "shared-delta.vmdk"); }, &message) == ErrorKind::Corrupt);
    CHECK(message == "grain directory entries 0 and 1 both refer to the grain table 5");

    put_le(f, 4 * 512 + 4, 0, 4);  // the second entry without a table: sound
    opener.add("shared-delta.vmdk", f);
    CHECK(open_image(opener, "shared-delta.vmdk")->layers()[0].allocated_bytes() == 0);
}
