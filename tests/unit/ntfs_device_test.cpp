// SPDX-License-Identifier: GPL-2.0-or-later
// The one libntfs-3g device: read-only over a DiskImage, writable over a WritableRawFile,
// and in both cases confined to its window of the disk.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <filesystem>
#include <vector>

#include "core/image/unique_fd.hpp"
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
    file.read(1024 + 10, back);
    CHECK(back == bytes);
    back = {};
    CHECK(dev->d_ops->pread(dev, back.data(), 4, 10) == 4);  // reads see earlier writes
    CHECK(back == bytes);

    errno = 0;
    CHECK(dev->d_ops->pwrite(dev, bytes.data(), 4, 4096) == -1);  // past the volume's end
    CHECK(errno == ENOSPC);
    CHECK(dev->d_ops->close(dev) == 0);
    std::filesystem::remove(path);
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
