// SPDX-License-Identifier: GPL-2.0-or-later
// The one libntfs-3g device: read-only over a DiskImage, writable over a WritableRawFile,
// and in both cases confined to its window of the disk.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/image/unique_fd.hpp"
#include "core/image/writable_disk.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_device.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/memory_image.hpp"

using namespace guestfrag;

namespace {

std::vector<std::byte> numbered(std::size_t n) {
    std::vector<std::byte> bytes(n);
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>(i % 251);
    return bytes;
}

/// A scratch raw file of `size` zero bytes, open read-write.
UniqueFd scratch_file(const std::filesystem::path& path, off_t size) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(fd);
    REQUIRE(::ftruncate(fd.get(), size) == 0);
    return fd;
}

}  // namespace

TEST_CASE("a device over a DiskImage reads its window and refuses to write", "[ntfs][device]") {
    const test::MemoryImage image(numbered(8192));
    const ntfs::Device device(image, 1024, 4096);
    ntfs_device* dev = device.get();
    CHECK_FALSE(device.writable());

    errno = 0;
    CHECK(dev->d_ops->open(dev, O_RDWR) == -1);
    CHECK(errno == EROFS);
    REQUIRE(dev->d_ops->open(dev, O_RDONLY) == 0);

    std::array<std::byte, 16> buf{};
    CHECK(dev->d_ops->pread(dev, buf.data(), 16, 0) == 16);
    CHECK(buf[0] == static_cast<std::byte>(1024 % 251));
    CHECK(dev->d_ops->pread(dev, buf.data(), 16, 4096 - 8) == 8);  // the window ends the volume
    CHECK(dev->d_ops->pread(dev, buf.data(), 16, 4096) == 0);
    errno = 0;
    CHECK(dev->d_ops->pwrite(dev, buf.data(), 16, 0) == -1);
    CHECK(errno == EROFS);
    CHECK(dev->d_ops->close(dev) == 0);
}

TEST_CASE("a device over a WritableRawFile writes inside its window only", "[ntfs][device]") {
    const auto path = test::scratch_dir() / "device_window.raw";
    const UniqueFd fd = scratch_file(path, 8192);
    WritableRawFile file(fd.get(), path.string());
    const ntfs::Device device(file, 1024, 4096);
    ntfs_device* dev = device.get();
    CHECK(device.writable());
    REQUIRE(dev->d_ops->open(dev, O_RDWR) == 0);

    const std::array<std::byte, 4> bytes{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    CHECK(dev->d_ops->pwrite(dev, bytes.data(), 4, 10) == 4);
    std::array<std::byte, 4> back{};
    CHECK(dev->d_ops->pread(dev, back.data(), 4, 10) == 4);  // reads see earlier writes
    CHECK(back == bytes);
    REQUIRE(dev->d_ops->sync(dev) == 0);  // small writes reach the file on sync
    back = {};
    file.read(1024 + 10, back);
    CHECK(back == bytes);

    errno = 0;
    CHECK(dev->d_ops->pwrite(dev, bytes.data(), 4, 4096) == -1);  // past the volume's end
    CHECK(errno == ENOSPC);
    CHECK(dev->d_ops->close(dev) == 0);
    std::filesystem::remove(path);
}

namespace {

/// A disk in memory that records each write and can be told to fail them.
class RecordingDisk final : public WritableDisk {
public:
    explicit RecordingDisk(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
    [[nodiscard]] const std::string& path() const noexcept override { return path_; }
    void read(std::uint64_t offset, std::span<std::byte> out) const override {
        REQUIRE(offset + out.size() <= bytes_.size());
        std::memcpy(out.data(), bytes_.data() + offset, out.size());
        ++reads;
    }
    void write(std::uint64_t offset, std::span<const std::byte> in) override {
        if (fail) throw Error(ErrorKind::Io, "cannot write " + path_ + ": No space left on device");
        REQUIRE(offset + in.size() <= bytes_.size());
        std::memcpy(bytes_.data() + offset, in.data(), in.size());
        writes.emplace_back(offset, in.size());
    }
    [[nodiscard]] const std::vector<std::byte>& bytes() const { return bytes_; }

    std::vector<std::pair<std::uint64_t, std::uint64_t>> writes;  ///< (offset, size)
    mutable std::uint64_t reads = 0;
    bool fail = false;

private:
    std::vector<std::byte> bytes_;
    std::string path_ = "recording.raw";
};

/// The disk's 4 KiB blocks that the writes [offset, offset + size) touch.
std::set<std::uint64_t> blocks_of(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& writes) {
    std::set<std::uint64_t> blocks;
    for (const auto& [offset, size] : writes)
        for (std::uint64_t b = offset / 4096; b * 4096 < offset + size; ++b) blocks.insert(b);
    return blocks;
}

}  // namespace

TEST_CASE("a writable device caches small transfers: every read sees every write, the disk gets "
          "the same bytes in the same blocks",
          "[ntfs][device]") {
    // libntfs-3g's byte-sized $Bitmap and record-sized MFT transfers mixed with cluster
    // copies, at random, on a window that starts off a page boundary (a partition at sector
    // 63) and is larger than the cache, so pages are evicted and loaded again. The oracle is
    // the same transfers done straight on a copy of the disk.
    constexpr std::uint64_t kOffset = 63 * 512;
    constexpr std::uint64_t kLength = 6ull << 20;
    std::vector<std::byte> reference = numbered(kOffset + kLength + 5000);
    RecordingDisk disk(reference);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> direct_writes;
    {
        const ntfs::Device device(disk, kOffset, kLength);
        ntfs_device* dev = device.get();
        REQUIRE(dev->d_ops->open(dev, O_RDWR) == 0);
        std::mt19937_64 random(7);
        std::vector<std::byte> buf;
        for (int op = 0; op < 30000; ++op) {
            const bool large = random() % 8 == 0;
            const std::uint64_t size = large ? 4096 * (1 + random() % 4) + random() % 2 * 512 : 1 + random() % 1024;
            // Most transfers land in a few hot places, as $Bitmap's and the MFT's do.
            const std::uint64_t span = random() % 4 == 0 ? kLength : 64 * 1024;
            const std::uint64_t pos = random() % (std::min(span, kLength) - size);
            buf.resize(size);
            INFO("op " << op << " at " << pos << " size " << size);
            if (random() % 2 == 0) {
                for (auto& b : buf) b = static_cast<std::byte>(random());
                REQUIRE(dev->d_ops->pwrite(dev, buf.data(), static_cast<s64>(size), static_cast<s64>(pos)) ==
                        static_cast<s64>(size));
                std::memcpy(reference.data() + kOffset + pos, buf.data(), size);
                direct_writes.emplace_back(kOffset + pos, size);
            } else {
                REQUIRE(dev->d_ops->pread(dev, buf.data(), static_cast<s64>(size), static_cast<s64>(pos)) ==
                        static_cast<s64>(size));
                REQUIRE(std::memcmp(buf.data(), reference.data() + kOffset + pos, size) == 0);
            }
        }
        CHECK(disk.writes.size() < direct_writes.size());
        REQUIRE(dev->d_ops->close(dev) == 0);
    }
    // The first byte that differs, not two 6 MiB vectors printed.
    const auto differs = std::mismatch(reference.begin(), reference.end(), disk.bytes().begin());
    CHECK(differs.first - reference.begin() == static_cast<std::ptrdiff_t>(reference.size()));
    // No block the transfers left alone was written: a thin output allocates what it did.
    CHECK(blocks_of(disk.writes) == blocks_of(direct_writes));
}

TEST_CASE("a writable device walks records in order at a system call per 128 KiB, not per page",
          "[ntfs][device]") {
    // A mover in MFT order reads each 1 KiB record and writes it back changed, over twice
    // the cache's 4 MiB, so pages are evicted as the walk goes on. It leaves the first
    // record of every page alone, as a mover does the records of files it does not move:
    // the runs of changed pages still go back whole.
    constexpr std::uint64_t kLength = 8ull << 20;
    constexpr std::uint64_t kRecord = 1024;
    std::vector<std::byte> reference = numbered(kLength);
    RecordingDisk disk(reference);
    {
        const ntfs::Device device(disk, 0, kLength);
        ntfs_device* dev = device.get();
        REQUIRE(dev->d_ops->open(dev, O_RDWR) == 0);
        std::vector<std::byte> record(kRecord);
        for (std::uint64_t at = 0; at < kLength; at += kRecord) {
            REQUIRE(dev->d_ops->pread(dev, record.data(), kRecord, static_cast<s64>(at)) == kRecord);
            REQUIRE(std::memcmp(record.data(), reference.data() + at, kRecord) == 0);
            if (at % 4096 == 0) continue;
            record[at / kRecord % kRecord] ^= std::byte{0x5a};
            REQUIRE(dev->d_ops->pwrite(dev, record.data(), kRecord, static_cast<s64>(at)) == kRecord);
            std::memcpy(reference.data() + at, record.data(), kRecord);
        }
        REQUIRE(dev->d_ops->close(dev) == 0);
    }
    CHECK(std::ranges::equal(disk.bytes(), reference));
    // 2,048 pages: read 32 at a time after the first miss, written back in runs the
    // evictions and the final flush join (one page alone: 2,048 of each). Each run starts
    // at the first change of its first page, the second record, and ends with its last page.
    CHECK(disk.reads <= 2048 / 32 + 1);
    CHECK(disk.writes.size() <= 2048 / 32 + 1);
    std::uint64_t written = 0;
    for (const auto& [offset, size] : disk.writes) {
        CHECK(offset % 4096 == kRecord);
        CHECK((offset + size) % 4096 == 0);
        written += size;
    }
    CHECK(written == kLength - kRecord * disk.writes.size());
}

TEST_CASE("a writable device reports a failed write-back on sync", "[ntfs][device][bad]") {
    RecordingDisk disk(numbered(16384));
    const ntfs::Device device(disk, 0, 16384);
    ntfs_device* dev = device.get();
    REQUIRE(dev->d_ops->open(dev, O_RDWR) == 0);
    const std::array<std::byte, 1> bit{std::byte{0xff}};
    REQUIRE(dev->d_ops->pwrite(dev, bit.data(), 1, 5000) == 1);
    disk.fail = true;
    errno = 0;
    CHECK(dev->d_ops->sync(dev) == -1);
    CHECK(errno == EIO);
    disk.fail = false;
    CHECK(dev->d_ops->close(dev) == 0);
    CHECK(disk.bytes()[5000] == std::byte{0xff});
}

TEST_CASE("WritableRawFile: reads past the end of the file are Corrupt", "[image][device]") {
    const auto path = test::scratch_dir() / "writable_end.raw";
    const UniqueFd fd = scratch_file(path, 512);
    WritableRawFile file(fd.get(), path.string());
    std::array<std::byte, 16> buf{};
    CHECK(test::kind_of([&] { file.read(512 - 8, buf); }) == ErrorKind::Corrupt);
    file.write(512 - 8, buf);  // writes grow the file
    file.read(512 - 8, buf);
    std::filesystem::remove(path);
}
