// SPDX-License-Identifier: GPL-2.0-or-later
// The byte-source seam under the container readers (core/image/byte_source.hpp,
// source_opener.hpp): every format opened from bytes in memory reads what it reads from
// the file, and read failures injected with FaultySource (EIO inside tables and inside
// data, short reads, a file that shrinks while open) come out as typed errors. Containers
// are made by qemu-img and tests/support writers into scratch files, then loaded into a
// MemoryOpener under "mem/<file name>".
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/host_file.hpp"
#include "core/image/open_chain.hpp"
#include "core/image/open_image.hpp"
#include "core/image/raw_image.hpp"
#include "core/image/source_opener.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/vmdk_writer.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using guestfrag::test::kind_of;
using guestfrag::test::run_ok;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t kDisk = 4 * MiB;
constexpr std::uint64_t kFirst = 1 * MiB;  ///< 64 KiB of 0xab written here
constexpr std::uint64_t kSecond = 3 * MiB;  ///< 4 KiB of 0x5c written here
const std::string kEio = ": Input/output error";

void require_qemu() { test::require_tools({"qemu-img", "qemu-io"}); }

/// A sparse 4 MiB raw disk holding 64 KiB of 0xab at 1 MiB and 4 KiB of 0x5c at 3 MiB.
fs::path make_raw(const test::WorkDir& dir) {
    const fs::path path = dir / "disk.raw";
    {
        std::ofstream out(path, std::ios::binary);
        REQUIRE(out);
    }
    fs::resize_file(path, kDisk);
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    const std::string first(64 * KiB, '\xab');
    const std::string second(4 * KiB, '\x5c');
    out.seekp(static_cast<std::streamoff>(kFirst));
    out.write(first.data(), static_cast<std::streamsize>(first.size()));
    out.seekp(static_cast<std::streamoff>(kSecond));
    out.write(second.data(), static_cast<std::streamsize>(second.size()));
    REQUIRE(out);
    return path;
}

/// `raw` converted by qemu-img into `name` (in the same directory) as `format` with `options`.
fs::path convert(const test::WorkDir& dir, const fs::path& raw, const std::string& name, const std::string& format,
                 const std::string& options = {}) {
    const fs::path out = dir / name;
    std::vector<std::string> argv{"qemu-img", "convert", "-q", "-f", "raw", "-O", format};
    if (!options.empty()) argv.insert(argv.end(), {"-o", options});
    argv.insert(argv.end(), {raw.string(), out.string()});
    run_ok(argv);
    return out;
}

/// Puts the files `names` of `dir` into `files` as "mem/<name>"; the one named `victim`
/// (if any) misbehaves as `faults` says.
void load(MemoryOpener& files, const test::WorkDir& dir, const std::vector<std::string>& names,
          const std::string& victim = {}, const Faults& faults = {}) {
    for (const std::string& name : names) {
        auto source = std::make_shared<const MemorySource>(
            "mem/" + name, std::make_shared<const std::vector<std::byte>>(test::file_bytes(dir / name)));
        if (name == victim)
            files.add(std::make_shared<const FaultySource>(std::move(source), faults));
        else
            files.add(std::move(source));
    }
}

/// Where two byte vectors first differ (nullopt when equal): what a failed comparison of
/// whole disks should print, rather than megabytes of both.
std::optional<std::size_t> first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
    const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    if (ia == a.end() && ib == b.end()) return std::nullopt;
    return static_cast<std::size_t>(ia - a.begin());
}

std::vector<std::byte> whole_disk(const DiskImage& image) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(image.size()));
    image.read(0, bytes);
    return bytes;
}

/// The disk's known content: the pattern make_raw wrote.
void check_pattern(const std::vector<std::byte>& disk) {
    REQUIRE(disk.size() == kDisk);
    CHECK(disk[kFirst] == std::byte{0xab});
    CHECK(disk[kFirst + 64 * KiB - 1] == std::byte{0xab});
    CHECK(disk[kFirst + 64 * KiB] == std::byte{0});
    CHECK(disk[kSecond] == std::byte{0x5c});
    CHECK(disk[kSecond + 4 * KiB - 1] == std::byte{0x5c});
    CHECK(disk[0] == std::byte{0});
}

/// The image at `path` opened from the file and `name` opened from `files` are the same
/// disk: format, layers (allocation, zeros, host extents) and every byte.
void check_same(const fs::path& path, const SourceOpener& files, const std::string& name) {
    const auto from_file = open_image(path.string());
    const auto from_memory = open_image(files, name);
    CHECK(from_memory->path() == name);
    CHECK(from_memory->format() == from_file->format());
    REQUIRE(from_memory->size() == from_file->size());
    REQUIRE(from_memory->layers().size() == from_file->layers().size());
    for (std::size_t i = 0; i < from_file->layers().size(); ++i) {
        const Layer& a = from_file->layers()[i];
        const Layer& b = from_memory->layers()[i];
        CHECK(b.format == a.format);
        CHECK(b.granule_size == a.granule_size);
        CHECK(b.allocated == a.allocated);
        CHECK(b.zero == a.zero);
        CHECK(b.host_extents == a.host_extents);
    }
    const auto bytes = whole_disk(*from_memory);
    CHECK(first_difference(bytes, whole_disk(*from_file)) == std::nullopt);
    check_pattern(bytes);
}

/// `file` in `dir` (one file: the image alone) loaded into memory equals the file on disk,
/// also when every read of it returns at most `chunk` bytes.
void check_same_from_memory(const test::WorkDir& dir, const std::string& file, std::size_t chunk) {
    for (const Faults& faults : {Faults{}, Faults{{}, chunk, std::nullopt}}) {
        MemoryOpener files;
        load(files, dir, {file}, file, faults);
        check_same(dir / file, files, "mem/" + file);
    }
}

/// Where the byte at virtual offset `at` lies in the top layer's file (as the reader maps it).
std::uint64_t file_offset_of(const fs::path& path, std::uint64_t at) {
    const auto image = open_image(path.string());
    for (const HostExtent& e : image->layers().front().host_extents)
        if (e.virtual_offset <= at && at < e.virtual_offset + e.length) return e.file_offset + (at - e.virtual_offset);
    FAIL("virtual offset " << at << " is not stored in " << path);
    return 0;
}

std::uint64_t be(const std::vector<std::byte>& bytes, std::uint64_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | std::to_integer<std::uint64_t>(bytes[at + static_cast<std::uint64_t>(i)]);
    return v;
}

std::uint64_t le(const std::vector<std::byte>& bytes, std::uint64_t at, int n) {
    std::uint64_t v = 0;
    for (int i = n; i-- > 0;) v = (v << 8) | std::to_integer<std::uint64_t>(bytes[at + static_cast<std::uint64_t>(i)]);
    return v;
}

/// One byte failing with EIO at `at`.
Faults eio_at(std::uint64_t at) { return Faults{{{at, at + 1}}, 0, std::nullopt}; }

/// Opens `name` from the files of `dir` with `victim` failing as `faults` says, reads the
/// whole disk, and returns the message of the Error(Io) that must come out.
std::string io_failure(const test::WorkDir& dir, const std::vector<std::string>& names, const std::string& victim,
                       const Faults& faults) {
    MemoryOpener files;
    load(files, dir, names, victim, faults);
    std::string message;
    CHECK(kind_of([&] { (void)whole_disk(*open_image(files, "mem/" + names.front())); }, &message) ==
          ErrorKind::Io);
    return message;
}

std::string failed_at(std::uint64_t offset) { return "read failed at offset " + std::to_string(offset) + kEio; }

}  // namespace

TEST_CASE("Memory and faulty sources read as documented", "[image][seam]") {
    auto bytes = std::make_shared<const std::vector<std::byte>>(10000, std::byte{7});
    const auto memory = std::make_shared<const MemorySource>("mem/x", bytes);
    std::array<std::byte, 64> buf{};
    CHECK(memory->size() == 10000);
    CHECK(memory->read_at(9990, buf) == 10);
    CHECK(memory->read_at(10000, buf) == 0);
    CHECK(memory->allocation_unit() == std::nullopt);
    CHECK(memory->stored_ranges(4096) == ByteSet(ByteSet::interval_type::right_open(0, 10000)));

    SECTION("a memory source with a map widens it to the granule and clips it to the size") {
        ByteSet stored;
        stored += ByteSet::interval_type::right_open(5000, 5100);
        stored += ByteSet::interval_type::right_open(9000, 9001);
        const MemorySource sparse("mem/sparse", bytes, MemorySource::Allocation{1024, stored});
        CHECK(sparse.allocation_unit() == 1024);
        ByteSet expected;
        expected += ByteSet::interval_type::right_open(4096, 10000);
        CHECK(sparse.stored_ranges(4096) == expected);
    }
    SECTION("short reads: at most max_read bytes per call, read_fully still gets everything") {
        const FaultySource faulty(memory, Faults{{}, 7, std::nullopt});
        CHECK(faulty.read_at(0, buf) == 7);
        std::vector<std::byte> all(10000);
        read_fully(faulty, 0, all);
        CHECK(first_difference(all, *bytes) == std::nullopt);
    }
    SECTION("EIO is reported at the first failing byte of the range read") {
        const FaultySource faulty(memory, Faults{{{100, 200}}, 0, std::nullopt});
        CHECK(faulty.read_at(0, std::span(buf).first(50)) == 50);  // before the range: fine
        std::string message;
        CHECK(kind_of([&] { (void)faulty.read_at(80, buf); }, &message) == ErrorKind::Io);
        CHECK(message == failed_at(100));
        CHECK(kind_of([&] { (void)faulty.read_at(150, buf); }, &message) == ErrorKind::Io);
        CHECK(message == failed_at(150));
        CHECK(faulty.read_at(200, buf) == 64);  // past it: fine again
    }
    SECTION("a source that shrank: size() as at opening, reads end early") {
        const FaultySource faulty(memory, Faults{{}, 0, std::uint64_t{5000}});
        CHECK(faulty.size() == 10000);
        CHECK(faulty.read_at(4990, buf) == 10);
        CHECK(faulty.read_at(5000, buf) == 0);
        std::vector<std::byte> all(10000);
        std::string message;
        CHECK(kind_of([&] { read_fully(faulty, 0, all); }, &message) == ErrorKind::Io);
        CHECK(message == "file shrank while reading it");
        const HostFile file(std::make_shared<const FaultySource>(memory, Faults{{}, 0, std::uint64_t{5000}}));
        CHECK(kind_of([&] { file.read_exact(4000, all, "table"); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "table at offset 4000 lies past the end of the file (10000 bytes)");
        CHECK(kind_of([&] { file.read_exact(4000, std::span(all).first(2000), "table"); }, &message) ==
              ErrorKind::Io);
        CHECK(message == "file shrank while reading it");
    }
}

TEST_CASE("Memory opener resolves names as readers join them", "[image][seam]") {
    MemoryOpener files;
    files.add("dir/a.img", std::vector<std::byte>(512, std::byte{1}));
    CHECK(files.exists("dir/./a.img"));
    CHECK(files.exists("dir/sub/../a.img"));
    CHECK_FALSE(files.exists("a.img"));
    CHECK(files.identity("dir/sub/../a.img") == "dir/a.img");
    CHECK(files.open("dir/./a.img")->name() == "dir/a.img");
    CHECK(files.open("dir/./a.img")->size() == 512);
    std::string message;
    CHECK(kind_of([&] { (void)files.open("dir/b.img"); }, &message) == ErrorKind::NotFound);
    CHECK(message == "no such file: dir/b.img");
}

TEST_CASE("File sources refuse what is not a file without blocking", "[image][seam]") {
    const test::WorkDir dir("file");
    const fs::path fifo = dir / "pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string message;
    // A FIFO with no writer would block a plain open() for ever.
    CHECK(kind_of([&] { (void)FileSource::open(fifo.string()); }, &message) == ErrorKind::Unsupported);
    CHECK(message == fifo.string() + " is not a regular file or block device");
    CHECK(kind_of([&] { RawImage image(fifo.string()); }, &message) == ErrorKind::Unsupported);
    CHECK(message == "not a regular file or block device");
    CHECK(kind_of([&] { (void)open_image(fifo.string()); }, &message) == ErrorKind::Unsupported);
    CHECK(message == "not a regular file or block device");

    const fs::path missing = dir / "missing.qcow2";
    CHECK(kind_of([&] { (void)HostFile(missing.string()); }, &message) == ErrorKind::NotFound);
    CHECK(message == "no such file: " + missing.string());
    const fs::path directory = dir / "sub";
    fs::create_directories(directory);
    CHECK(kind_of([&] { (void)file_opener().open(directory.string()); }, &message) == ErrorKind::Unsupported);
    CHECK(message == directory.string() + " is not a regular file or block device");
    CHECK(kind_of([&] { RawImage image(directory.string()); }, &message) == ErrorKind::Unsupported);
    CHECK(message == "is a directory");

    const fs::path raw = make_raw(dir);
    const auto source = FileSource::open(raw.string());
    CHECK(source->size() == kDisk);
    CHECK_FALSE(source->is_block_device());
    std::array<std::byte, 16> buf{};
    CHECK(source->read_at(kDisk - 4, buf) == 4);
    CHECK(source->read_at(kFirst, buf) == 16);
    CHECK(buf[0] == std::byte{0xab});
    // The holes make_raw left: only the two written ranges (in host blocks) are stored.
    const ByteSet stored = source->stored_ranges(4096);
    CHECK(boost::icl::contains(stored, ByteSet::interval_type::right_open(kFirst, kFirst + 64 * KiB)));
    CHECK_FALSE(boost::icl::intersects(stored, ByteSet::interval_type::right_open(0, 64 * KiB)));
}

TEST_CASE("Raw disks read from memory", "[image][seam][raw]") {
    const test::WorkDir dir("raw");
    const fs::path raw = make_raw(dir);
    const auto bytes = std::make_shared<const std::vector<std::byte>>(test::file_bytes(raw));

    SECTION("without a map every byte is stored; with one, its holes are the layer's") {
        const RawImage plain(std::make_shared<const MemorySource>("mem/disk.raw", bytes));
        CHECK(plain.layers().front().allocated == ByteSet(ByteSet::interval_type::right_open(0, kDisk)));
        CHECK(plain.layers().front().granule_size == 512);
        ByteSet stored;
        stored += ByteSet::interval_type::right_open(kFirst, kFirst + 64 * KiB);
        stored += ByteSet::interval_type::right_open(kSecond, kSecond + 100);
        const RawImage sparse(
            std::make_shared<const MemorySource>("mem/disk.raw", bytes, MemorySource::Allocation{4096, stored}));
        ByteSet expected = stored;
        expected += ByteSet::interval_type::right_open(kSecond, kSecond + 4096);
        CHECK(sparse.layers().front().allocated == expected);
        CHECK(sparse.layers().front().granule_size == 4096);
        const auto disk = whole_disk(sparse);
        check_pattern(disk);
        CHECK(first_difference(disk, *bytes) == std::nullopt);
    }
    SECTION("open_image from a memory opener is the same raw disk") {
        MemoryOpener files;
        load(files, dir, {"disk.raw"});
        const auto image = open_image(files, "mem/disk.raw");
        CHECK(format_name(image->format()) == "raw");
        CHECK(image->path() == "mem/disk.raw");
        check_pattern(whole_disk(*image));
        std::string message;
        CHECK(kind_of([&] { (void)open_image(files, "mem/disk.raw", {std::nullopt, {{1, {}, "mem/other"}}}); }, &message) ==
              ErrorKind::Unsupported);
        CHECK(message == "a raw image has no parent; --parent does not apply");
    }
    SECTION("EIO inside data, and a disk that shrank") {
        CHECK(io_failure(dir, {"disk.raw"}, "disk.raw", eio_at(kSecond + 10)) == failed_at(kSecond + 10));
        CHECK(io_failure(dir, {"disk.raw"}, "disk.raw", Faults{{}, 0, kSecond}) == "file shrank while reading it");
        MemoryOpener empty;
        empty.add("mem/empty.raw", std::vector<std::byte>{});
        std::string message;
        CHECK(kind_of([&] { (void)open_image(empty, "mem/empty.raw"); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "empty image (0 bytes)");
    }
}

TEST_CASE("qcow2 from memory: same disk, failures typed", "[image][seam][qcow2]") {
    require_qemu();
    const test::WorkDir dir("qcow2");
    const fs::path raw = make_raw(dir);
    const fs::path image = convert(dir, raw, "disk.qcow2", "qcow2");
    const std::vector<std::byte> file = test::file_bytes(image);
    const std::uint64_t l1 = be(file, 40, 8);
    const std::uint64_t l2 = be(file, l1, 8) & 0x00fffffffffffe00ull;
    const std::uint64_t data = file_offset_of(image, kFirst);
    REQUIRE(l1 > 0);
    REQUIRE(l2 > 0);
    REQUIRE(data > l2);

    SECTION("same disk") {
        MemoryOpener files;
        load(files, dir, {"disk.qcow2"});
        check_same(image, files, "mem/disk.qcow2");
    }
    SECTION("EIO in the header, the L1 table, an L2 table and data") {
        CHECK(io_failure(dir, {"disk.qcow2"}, "disk.qcow2", eio_at(0)) == failed_at(0));
        CHECK(io_failure(dir, {"disk.qcow2"}, "disk.qcow2", eio_at(l1)) == failed_at(l1));
        CHECK(io_failure(dir, {"disk.qcow2"}, "disk.qcow2", eio_at(l2 + 8)) == failed_at(l2 + 8));
        CHECK(io_failure(dir, {"disk.qcow2"}, "disk.qcow2", eio_at(data + 4096)) == failed_at(data + 4096));
    }
    SECTION("short reads change nothing") {
        MemoryOpener files;
        load(files, dir, {"disk.qcow2"}, "disk.qcow2", Faults{{}, 3, std::nullopt});
        check_same(image, files, "mem/disk.qcow2");
    }
    SECTION("a file that shrinks under the data") {
        CHECK(io_failure(dir, {"disk.qcow2"}, "disk.qcow2", Faults{{}, 0, data + 100}) ==
              "file shrank while reading it");
    }
}

TEST_CASE("qcow2 chains open from memory", "[image][seam][qcow2]") {
    require_qemu();
    const test::WorkDir dir("chain");
    const fs::path raw = make_raw(dir);
    convert(dir, raw, "base.qcow2", "qcow2");
    run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.qcow2", "-F", "qcow2", (dir / "top.qcow2").string()});
    test::qemu_io(dir / "top.qcow2", "qcow2", {"write -P 0x77 2M 64K"});

    MemoryOpener files;
    load(files, dir, {"top.qcow2", "base.qcow2"});
    const auto image = open_image(files, "mem/top.qcow2");
    REQUIRE(image->layers().size() == 2);
    CHECK(image->layers()[1].path == "mem/base.qcow2");
    const auto disk = whole_disk(*image);
    check_pattern(disk);
    CHECK(disk[2 * MiB] == std::byte{0x77});
    check_same(dir / "top.qcow2", files, "mem/top.qcow2");

    SECTION("a missing parent is named as the file reader names it") {
        MemoryOpener top_only;
        load(top_only, dir, {"top.qcow2"});
        std::string message;
        CHECK(kind_of([&] { (void)open_image(top_only, "mem/top.qcow2"); }, &message) == ErrorKind::NotFound);
        CHECK(message ==
              "parent not found: mem/top.qcow2 (depth 0) records parent base.qcow2 (looked for mem/base.qcow2); "
              "give it with --parent 1=PATH");
        // --parent names a file of the same opener.
        top_only.add("elsewhere/renamed.qcow2", test::file_bytes(dir / "base.qcow2"));
        const auto moved = open_chain(top_only.open("mem/top.qcow2"), top_only, {{0, "base.qcow2", "elsewhere/renamed.qcow2"}});
        CHECK(moved->layers()[1].path == "elsewhere/renamed.qcow2");
        check_pattern(whole_disk(*moved));
    }
    SECTION("EIO in the parent's L1 table") {
        const std::uint64_t l1 = be(test::file_bytes(dir / "base.qcow2"), 40, 8);
        CHECK(io_failure(dir, {"top.qcow2", "base.qcow2"}, "base.qcow2", eio_at(l1)) == failed_at(l1));
    }
}

TEST_CASE("VMDK variants from memory: same disk, failures typed", "[image][seam][vmdk]") {
    require_qemu();
    const test::WorkDir dir("vmdk");
    const fs::path raw = make_raw(dir);

    SECTION("monolithicSparse") {
        const fs::path image = convert(dir, raw, "disk.vmdk", "vmdk");
        MemoryOpener files;
        load(files, dir, {"disk.vmdk"});
        check_same(image, files, "mem/disk.vmdk");
        const std::vector<std::byte> file = test::file_bytes(image);
        const std::uint64_t gd = le(file, 56, 8) * 512;
        const std::uint64_t gt = le(file, gd, 4) * 512;
        const std::uint64_t data = file_offset_of(image, kFirst);
        CHECK(io_failure(dir, {"disk.vmdk"}, "disk.vmdk", eio_at(gd)) == failed_at(gd));
        CHECK(io_failure(dir, {"disk.vmdk"}, "disk.vmdk", eio_at(gt + 4)) == failed_at(gt + 4));
        CHECK(io_failure(dir, {"disk.vmdk"}, "disk.vmdk", eio_at(data)) == failed_at(data));
    }
    SECTION("twoGbMaxExtentSparse: descriptor and extent file") {
        const fs::path image = convert(dir, raw, "split.vmdk", "vmdk", "subformat=twoGbMaxExtentSparse");
        REQUIRE(fs::exists(dir / "split-s001.vmdk"));
        const std::vector<std::string> names{"split.vmdk", "split-s001.vmdk"};
        MemoryOpener files;
        load(files, dir, names);
        check_same(image, files, "mem/split.vmdk");
        const std::vector<std::byte> extent = test::file_bytes(dir / "split-s001.vmdk");
        const std::uint64_t gd = le(extent, 56, 8) * 512;
        const std::uint64_t data = file_offset_of(image, kFirst);
        // Failures while opening an extent name it; later ones are the source's own.
        CHECK(io_failure(dir, names, "split-s001.vmdk", eio_at(gd)) ==
              "extent 1 (split-s001.vmdk): " + failed_at(gd));
        CHECK(io_failure(dir, names, "split-s001.vmdk", eio_at(data)) == failed_at(data));
        CHECK(io_failure(dir, names, "split.vmdk", eio_at(10)) == failed_at(10));
        MemoryOpener descriptor_only;
        load(descriptor_only, dir, {"split.vmdk"});
        std::string message;
        CHECK(kind_of([&] { (void)open_image(descriptor_only, "mem/split.vmdk"); }, &message) ==
              ErrorKind::NotFound);
        CHECK(message == "extent 1 file not found: split-s001.vmdk (looked for mem/split-s001.vmdk)");
    }
    SECTION("monolithicFlat: descriptor and flat extent, holes from the source's map") {
        const fs::path image = convert(dir, raw, "flat.vmdk", "vmdk", "subformat=monolithicFlat");
        REQUIRE(fs::exists(dir / "flat-flat.vmdk"));
        MemoryOpener files;
        load(files, dir, {"flat.vmdk"});
        // The map the host would give: the two written ranges (host blocks are 4 KiB here).
        ByteSet stored;
        stored += ByteSet::interval_type::right_open(kFirst, kFirst + 64 * KiB);
        stored += ByteSet::interval_type::right_open(kSecond, kSecond + 4 * KiB);
        files.add(std::make_shared<const MemorySource>(
            "mem/flat-flat.vmdk",
            std::make_shared<const std::vector<std::byte>>(test::file_bytes(dir / "flat-flat.vmdk")),
            MemorySource::Allocation{4096, stored}));
        const auto memory = open_image(files, "mem/flat.vmdk");
        CHECK(memory->layers().front().allocated == stored);
        const auto disk = whole_disk(*memory);
        CHECK(first_difference(disk, whole_disk(*open_image(image.string()))) == std::nullopt);
        CHECK(disk[kFirst] == std::byte{0xab});
        CHECK(io_failure(dir, {"flat.vmdk", "flat-flat.vmdk"}, "flat-flat.vmdk", eio_at(kSecond)) ==
              failed_at(kSecond));
    }
    SECTION("streamOptimized") {
        const fs::path image = convert(dir, raw, "stream.vmdk", "vmdk", "subformat=streamOptimized");
        REQUIRE(image == dir / "stream.vmdk");
        check_same_from_memory(dir, "stream.vmdk", 5);
    }
    SECTION("COWD and seSparse extents") {
        test::write_cowd_extent(raw, dir / "delta.vmdk");
        test::write_sesparse_extent(raw, dir / "se.vmdk");
        for (const std::string name : {"delta.vmdk", "se.vmdk"}) {
            INFO(name);
            MemoryOpener files;
            load(files, dir, {name});
            check_same(dir / name, files, "mem/" + name);
            // Grain directory sector: COWD header u32 at 20, seSparse constant header u64 at 128.
            const std::vector<std::byte> file = test::file_bytes(dir / name);
            const std::uint64_t gd = (name == "delta.vmdk" ? le(file, 20, 4) : le(file, 128, 8)) * 512;
            const std::uint64_t data = file_offset_of(dir / name, kSecond);
            REQUIRE(gd > 0);
            CHECK(io_failure(dir, {name}, name, eio_at(gd + 4)) == failed_at(gd + 4));
            CHECK(io_failure(dir, {name}, name, eio_at(data + 1)) == failed_at(data + 1));
        }
    }
}

TEST_CASE("VHD from memory: same disk, failures typed", "[image][seam][vhd]") {
    require_qemu();
    const test::WorkDir dir("vhd");
    const fs::path raw = make_raw(dir);

    SECTION("dynamic") {
        const fs::path image = convert(dir, raw, "dynamic.vhd", "vpc", "subformat=dynamic,force_size=on");
        MemoryOpener files;
        load(files, dir, {"dynamic.vhd"});
        check_same(image, files, "mem/dynamic.vhd");
        const std::vector<std::byte> file = test::file_bytes(image);
        const std::uint64_t header = be(file, 16, 8);  // the footer copy at 0 points to it
        const std::uint64_t bat = be(file, header + 16, 8);
        const std::uint64_t data = file_offset_of(image, kFirst);
        CHECK(io_failure(dir, {"dynamic.vhd"}, "dynamic.vhd", eio_at(header + 100)) == failed_at(header + 100));
        CHECK(io_failure(dir, {"dynamic.vhd"}, "dynamic.vhd", eio_at(bat)) == failed_at(bat));
        CHECK(io_failure(dir, {"dynamic.vhd"}, "dynamic.vhd", eio_at(data)) == failed_at(data));
    }
    SECTION("fixed") {
        const fs::path image = convert(dir, raw, "fixed.vhd", "vpc", "subformat=fixed,force_size=on");
        MemoryOpener files;
        load(files, dir, {"fixed.vhd"});
        check_same(image, files, "mem/fixed.vhd");
        const std::uint64_t footer = fs::file_size(image) - 512;
        CHECK(io_failure(dir, {"fixed.vhd"}, "fixed.vhd", eio_at(footer + 8)) == failed_at(footer + 8));
        CHECK(io_failure(dir, {"fixed.vhd"}, "fixed.vhd", eio_at(kSecond)) == failed_at(kSecond));
        // Cut short after its size was taken: the footer, its last sector, reads nothing.
        CHECK(io_failure(dir, {"fixed.vhd"}, "fixed.vhd", Faults{{}, 0, kSecond}) == "file shrank while reading it");
    }
}

TEST_CASE("VHDX from memory: same disk, failures typed", "[image][seam][vhdx]") {
    require_qemu();
    const test::WorkDir dir("vhdx");
    const fs::path raw = make_raw(dir);
    const fs::path image = convert(dir, raw, "disk.vhdx", "vhdx");
    const std::vector<std::byte> file = test::file_bytes(image);
    // Region table at 192 KiB: 16-byte header, then 32-byte entries (GUID, offset, ...).
    std::uint64_t bat = 0;
    for (std::uint64_t entry = 192 * KiB + 16; entry < 192 * KiB + 16 + 32 * le(file, 192 * KiB + 8, 4); entry += 32)
        if (le(file, entry, 4) == 0x2dc27766) bat = le(file, entry + 16, 8);
    REQUIRE(bat > 0);
    const std::uint64_t data = file_offset_of(image, kFirst);

    SECTION("same disk, also with short reads") {
        REQUIRE(image == dir / "disk.vhdx");
        check_same_from_memory(dir, "disk.vhdx", 511);
    }
    SECTION("EIO in the identifier, the BAT and data") {
        CHECK(io_failure(dir, {"disk.vhdx"}, "disk.vhdx", eio_at(0)) == failed_at(0));
        CHECK(io_failure(dir, {"disk.vhdx"}, "disk.vhdx", eio_at(bat)) == failed_at(bat));
        CHECK(io_failure(dir, {"disk.vhdx"}, "disk.vhdx", eio_at(data + 512)) == failed_at(data + 512));
    }
}
