// SPDX-License-Identifier: GPL-2.0-or-later
// RawImage (reads, errors, host allocation via SEEK_DATA/SEEK_HOLE) and open_image's
// content-based format detection. qemu-img is the independent oracle: it maps a raw
// file's data ranges and creates real container files to detect.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/image/raw_image.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;

using guestfrag::test::kind_of;

namespace {

fs::path scratch_path(const std::string& name) {
    return test::scratch_dir() / (name + "." + std::to_string(::getpid()));
}

std::byte pattern_at(std::uint64_t offset) {
    return static_cast<std::byte>((offset * 131 + offset / 509) & 0xff);
}

fs::path patterned_file(const std::string& name, std::uint64_t size) {
    const fs::path path = scratch_path(name);
    std::vector<std::byte> bytes(size);
    for (std::uint64_t i = 0; i < size; ++i) bytes[i] = pattern_at(i);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
}

/// data:true ranges of `qemu-img map --output=json` for a raw file.
ByteSet qemu_data_ranges(const fs::path& file) {
    const auto r = test::run({"qemu-img", "map", "-f", "raw", "--output=json", file.string()});
    REQUIRE(r.status == 0);
    ByteSet data;
    const std::regex object_re(R"(\{[^}]*\})");
    const std::regex start_re(R"("start":\s*(\d+))");
    const std::regex length_re(R"("length":\s*(\d+))");
    const std::regex data_re(R"("data":\s*(true|false))");
    std::smatch m;
    for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), object_re); it != std::sregex_iterator();
         ++it) {
        const std::string object = it->str();
        REQUIRE(std::regex_search(object, m, start_re));
        const std::uint64_t start = std::stoull(m[1]);
        REQUIRE(std::regex_search(object, m, length_re));
        const std::uint64_t length = std::stoull(m[1]);
        REQUIRE(std::regex_search(object, m, data_re));
        if (m[1] == "true") data += ByteSet::interval_type::right_open(start, start + length);
    }
    return data;
}

std::string describe(const ByteSet& set) {
    std::string text;
    for (const auto& iv : set)
        text += "[" + std::to_string(iv.lower()) + "," + std::to_string(iv.upper()) + ") ";
    return text;
}

}  // namespace

TEST_CASE("RawImage refuses what is not a readable disk", "[image][raw]") {
    std::string message;
    SECTION("missing file") {
        CHECK(kind_of([] { RawImage image(scratch_path("does-not-exist").string()); }, &message) ==
              ErrorKind::NotFound);
        CHECK(message == "no such file");
        CHECK(kind_of([] { (void)open_image(scratch_path("does-not-exist").string()); }) ==
              ErrorKind::NotFound);
    }
    SECTION("directory") {
        CHECK(kind_of([] { RawImage image(test::scratch_dir().string()); }, &message) ==
              ErrorKind::Unsupported);
        CHECK(message == "is a directory");
    }
    SECTION("empty file") {
        const fs::path path = scratch_path("empty.img");
        { std::ofstream create(path, std::ios::binary | std::ios::trunc); }
        CHECK(kind_of([&] { RawImage image(path.string()); }, &message) == ErrorKind::Corrupt);
        CHECK(message == "empty image (0 bytes)");
        fs::remove(path);
    }
    SECTION("a FIFO neither hangs nor is read") {
        const fs::path path = scratch_path("fifo");
        fs::remove(path);
        REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
        CHECK(kind_of([&] { RawImage image(path.string()); }) == ErrorKind::Unsupported);
        fs::remove(path);
    }
}

TEST_CASE("RawImage reads exact bytes and nothing past the end", "[image][raw]") {
    const std::uint64_t size = 1000;  // deliberately not a multiple of 512
    const fs::path path = patterned_file("pattern.img", size);
    const RawImage image(path.string());
    CHECK(image.size() == size);
    CHECK(format_name(image.format()) == "raw");
    CHECK(image.path() == path.string());
    CHECK_FALSE(image.is_block_device());

    std::vector<std::byte> all(size);
    image.read(0, all);
    for (std::uint64_t i = 0; i < size; ++i) REQUIRE(all[i] == pattern_at(i));
    std::vector<std::byte> tail(10);
    image.read(size - 10, tail);
    CHECK(std::equal(tail.begin(), tail.end(), all.end() - 10));
    image.read(size, std::span<std::byte>());  // an empty read at the very end is fine

    std::string message;
    CHECK(kind_of([&] { image.read(size - 5, tail); }, &message) == ErrorKind::Corrupt);
    CHECK(message.find("read past end of disk") != std::string::npos);
    CHECK(kind_of([&] { image.read(~std::uint64_t{0} - 2, tail); }) == ErrorKind::Corrupt);
    fs::remove(path);
}

TEST_CASE("RawImage serves concurrent readers", "[image][raw][threads]") {
    const std::uint64_t size = 4 << 20;
    const fs::path path = patterned_file("threads.img", size);
    const RawImage image(path.string());
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(t);
            std::vector<std::byte> buf(8192);
            for (int i = 0; i < 500; ++i) {
                const std::uint64_t offset = rng() % (size - buf.size());
                image.read(offset, buf);
                for (std::size_t k = 0; k < buf.size(); ++k)
                    if (buf[k] != pattern_at(offset + k)) ++bad;
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(bad == 0);
    fs::remove(path);
}

TEST_CASE("RawImage maps host allocation like qemu-img map", "[image][raw][layers]") {
    test::require_tools({"qemu-img"});
    const fs::path path = scratch_path("sparse.img");
    fs::remove(path);
    ByteSet written;
    {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, 16 << 20) == 0);
        const std::vector<char> block(64 << 10, 'x');
        for (const off_t at : {off_t{3} << 20, off_t{9} << 20}) {
            REQUIRE(::pwrite(fd, block.data(), block.size(), at) == static_cast<ssize_t>(block.size()));
            written += ByteSet::interval_type::right_open(static_cast<std::uint64_t>(at),
                                                          static_cast<std::uint64_t>(at) + block.size());
        }
        REQUIRE(::fsync(fd) == 0);
        ::close(fd);
    }
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);

    const RawImage image(path.string());
    REQUIRE(image.layers().size() == 1);
    const Layer& layer = image.layers()[0];
    CHECK(layer.depth == 0);
    CHECK(format_name(layer.format) == "raw");
    CHECK(layer.path == path.string());
    CHECK(layer.granule_size == static_cast<std::uint64_t>(st.st_blksize));

    const ByteSet oracle = qemu_data_ranges(path);
    INFO("ours:     " << describe(layer.allocated));
    INFO("qemu-img: " << describe(oracle));
    CHECK(layer.allocated == oracle);
    CHECK(boost::icl::contains(layer.allocated, written));
    if (boost::icl::length(oracle) < 16u << 20) {
        // The host file system reports holes: then exactly the written blocks are stored.
        CHECK(layer.allocated == written);
        CHECK(layer.allocated_bytes() == 2u * (64u << 10));
    } else {
        WARN("the scratch file system does not report holes; only the qemu-img comparison applies");
    }
    fs::remove(path);
}

namespace {

/// Pages of the file at `path`, [from, to), that are in the host's page cache (mincore).
std::size_t cached_pages(const fs::path& path, std::uint64_t from, std::uint64_t to) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t length = to - from;
    void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(from));
    ::close(fd);
    REQUIRE(map != MAP_FAILED);
    std::vector<unsigned char> resident((length + page - 1) / page);
    const int status = ::mincore(map, length, resident.data());
    ::munmap(map, length);
    REQUIRE(status == 0);
    return static_cast<std::size_t>(
        std::ranges::count_if(resident, [](unsigned char c) { return (c & 1) != 0; }));
}

/// Drops the file's pages from the page cache (they are clean: it was synced).
void evict(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    ::close(fd);
}

}  // namespace

TEST_CASE("RawImage reads a sparse file's data without the host reading ahead into its holes",
          "[image][raw]") {
    // 2 MiB of data, then 30 MiB of hole. A reader of the data in 128 KiB pieces through a
    // plain descriptor is the control: the kernel's read-ahead runs past the data and
    // zero-fills pages of the hole. Through RawImage none of them may be in the page cache.
    constexpr std::uint64_t kData = 2 << 20;
    constexpr std::uint64_t kSize = 32 << 20;
    constexpr std::size_t kPiece = 128 << 10;
    const fs::path path = scratch_path("read-ahead.img");
    {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, kSize) == 0);
        const std::vector<char> data(kData, 'x');
        REQUIRE(::pwrite(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()));
        REQUIRE(::fsync(fd) == 0);
        ::close(fd);
    }
    std::vector<std::byte> piece(kPiece);
    evict(path);
    {
        const int fd = ::open(path.c_str(), O_RDONLY);
        REQUIRE(fd >= 0);
        for (std::uint64_t at = 0; at < kData; at += kPiece)
            REQUIRE(::pread(fd, piece.data(), kPiece, static_cast<off_t>(at)) ==
                    static_cast<ssize_t>(kPiece));
        ::close(fd);
    }
    {
        const std::string where = test::scratch_dir().string();
        INFO("the control found no page of the hole in the page cache: the file system of "
             << where << " or its device reads nothing ahead, so this cannot be told");
        REQUIRE(cached_pages(path, kData, kSize) > 0);
    }

    evict(path);
    REQUIRE(cached_pages(path, 0, kSize) == 0);
    const RawImage image(path.string());
    REQUIRE(boost::icl::length(image.layers().front().allocated) == kData);
    for (std::uint64_t at = 0; at < kData; at += kPiece) image.read(at, piece);
    CHECK(cached_pages(path, 0, kData) == kData / static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)));
    CHECK(cached_pages(path, kData, kSize) == 0);
    fs::remove(path);
}

TEST_CASE("detect_format recognises containers by content", "[image][detect]") {
    const auto bytes = [](std::string_view text, std::size_t size = 1024) {
        std::vector<std::byte> v(size);
        std::transform(text.begin(), text.end(), v.begin(), [](char c) { return static_cast<std::byte>(c); });
        return v;
    };
    using namespace std::string_view_literals;
    const std::vector<std::byte> no_tail;
    CHECK(detect_format(bytes("COWD\x01\0\0\0"sv), no_tail) == ImageFormat::VmdkCowd);
    CHECK(detect_format(bytes("\xbe\xba\xfe\xca\0\0\0\0\x01\0\0\0\x02\0\0\0"sv), no_tail) ==
          ImageFormat::VmdkSeSparse);
    CHECK(detect_format(bytes("\xbe\xba\xfe\xca\x01\0\0\0"sv), no_tail) == ImageFormat::Raw);
    CHECK(detect_format(bytes("KDMV"sv), no_tail) == ImageFormat::VmdkSparse);

    // A descriptor counts only within the first KiB.
    auto text = bytes("");
    const std::string_view descriptor = "# Disk DescriptorFile\nversion=1\n";
    std::copy_n(reinterpret_cast<const std::byte*>(descriptor.data()), descriptor.size(), text.begin() + 100);
    CHECK(detect_format(text, no_tail) == ImageFormat::VmdkDescriptor);
    auto late = bytes("", 4096);
    std::copy_n(reinterpret_cast<const std::byte*>(descriptor.data()), descriptor.size(),
                late.begin() + 2000);
    CHECK(detect_format(late, no_tail) == ImageFormat::Raw);

    // VHD footers: 512 bytes, or the 511 bytes of very old Virtual PC versions.
    CHECK(detect_format(bytes(""), bytes("conectix"sv, 512)) == ImageFormat::Vhd);
    CHECK(detect_format(bytes(""), bytes("\0conectix"sv, 512)) == ImageFormat::Vhd);
    CHECK(detect_format(bytes(""), bytes("conectix"sv, 100)) == ImageFormat::Raw);

    CHECK(detect_format({}, {}) == ImageFormat::Raw);
    CHECK(detect_format(bytes("QFI"sv, 3), {}) == ImageFormat::Raw);
    CHECK(format_name(ImageFormat::VmdkSeSparse) == "vmdk seSparse");
}

TEST_CASE("open_image detects formats made by qemu-img, whatever the file name", "[image][detect]") {
    test::require_tools({"qemu-img"});
    struct Case {
        std::vector<std::string> create;  ///< qemu-img create arguments before FILE SIZE
        std::string expected;             ///< format_name() of what is detected
    };
    const std::vector<Case> cases = {
        {{"-f", "qcow2"}, "qcow2"},
        {{"-f", "qcow2", "-o", "compat=0.10"}, "qcow2"},
        {{"-f", "vmdk"}, "vmdk sparse"},
        {{"-f", "vmdk", "-o", "subformat=streamOptimized"}, "vmdk sparse"},
        {{"-f", "vmdk", "-o", "subformat=monolithicFlat"}, "vmdk descriptor"},
        {{"-f", "vhdx"}, "vhdx"},
        {{"-f", "vpc"}, "vhd"},
        {{"-f", "vpc", "-o", "subformat=fixed"}, "vhd"},
        {{"-f", "vdi"}, "vdi"},
        {{"-f", "qed"}, "qed"},
    };
    // qemu-img may add files beside the image (a flat VMDK's extent): one directory for all.
    const fs::path dir = scratch_path("detect");
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& c : cases) {
        // A misleading name on purpose: detection must look at the content only.
        const fs::path path = dir / "looks-raw.img";
        std::vector<std::string> argv{"qemu-img", "create", "-q"};
        argv.insert(argv.end(), c.create.begin(), c.create.end());
        argv.push_back(path.string());
        argv.push_back("8M");
        const auto made = test::run(argv);
        INFO("qemu-img create " << c.create.back() << ": " << made.err);
        REQUIRE(made.status == 0);
        CHECK(format_name(sniff_format(path.string())) == c.expected);
    }
    fs::remove_all(dir);

    SECTION("a raw file named like a container is raw") {
        const fs::path path = patterned_file("really-raw.vmdk", 8192);
        const auto image = open_image(path.string());
        CHECK(format_name(image->format()) == "raw");
        CHECK(image->size() == 8192);
        fs::remove(path);
    }
}

TEST_CASE("open_image on the external sample images", "[image][detect]") {
    const std::vector<std::pair<std::string, std::string>> samples = {
        {"windows_volume.qcow2", "qcow2"},
        {"hyperv-fixed.vhdx.gz", "vhdx"},
        {"hyperv-differencing.avhdx.gz", "vhdx"},
    };
    for (const auto& [name, format] : samples) {
        const fs::path path = test::testdata(name);
        CHECK(format_name(sniff_format(path.string())) == format);
    }
    const fs::path dftt = test::testdata("dftt-10-ntfs-disk.dd.xz");
    const auto image = open_image(dftt.string());
    CHECK(format_name(image->format()) == "raw");
    CHECK(image->size() == fs::file_size(dftt));
}
