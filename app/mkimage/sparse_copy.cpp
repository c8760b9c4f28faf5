// SPDX-License-Identifier: GPL-2.0-or-later
// Moves mkntfs's freshly made volume into the disk file. The volume is mostly holes (quick
// format), so walking data extents makes this cost a few MiB of I/O for any disk size.
#include "app/mkimage/sparse_copy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace guestfrag::mkimage {

namespace {

constexpr std::size_t kBuffer = 1 << 20;
constexpr std::size_t kBlock = 4096;

[[noreturn]] void io_error(const char* what) {
    throw Error(ErrorKind::Io, std::string(what) + ": " + std::strerror(errno));
}

bool all_zero(const unsigned char* p, std::size_t n) {
    return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

void copy_range(int from, int to, off_t begin, off_t end, std::uint64_t offset,
                std::vector<unsigned char>& buf) {
    for (off_t pos = begin; pos < end;) {
        const auto want =
            static_cast<std::size_t>(std::min<off_t>(end - pos, static_cast<off_t>(buf.size())));
        const ssize_t got = ::pread(from, buf.data(), want, pos);
        if (got < 0) {
            if (errno == EINTR) continue;
            io_error("reading the formatted volume");
        }
        if (got == 0) break;
        for (std::size_t at = 0; at < static_cast<std::size_t>(got); at += kBlock) {
            const std::size_t n = std::min(kBlock, static_cast<std::size_t>(got) - at);
            if (all_zero(buf.data() + at, n)) continue;
            const auto target = static_cast<off_t>(offset + static_cast<std::uint64_t>(pos) + at);
            for (std::size_t done = 0; done < n;) {
                const ssize_t put =
                    ::pwrite(to, buf.data() + at + done, n - done, target + static_cast<off_t>(done));
                if (put < 0 && errno == EINTR) continue;
                if (put <= 0) io_error("writing the disk image");
                done += static_cast<std::size_t>(put);
            }
        }
        pos += got;
    }
}

}  // namespace

void copy_data_extents(int from, int to, std::uint64_t offset) {
    struct stat st {};
    if (::fstat(from, &st) != 0) io_error("stat of the formatted volume");
    const off_t size = st.st_size;
    std::vector<unsigned char> buf(kBuffer);
    off_t pos = 0;
    while (pos < size) {
        off_t data = ::lseek(from, pos, SEEK_DATA);
        if (data < 0) {
            if (errno == ENXIO) break;  // only a hole remains
            if (errno == EINVAL) {      // no SEEK_DATA on this file system: copy everything
                copy_range(from, to, pos, size, offset, buf);
                return;
            }
            io_error("seeking the formatted volume");
        }
        off_t hole = ::lseek(from, data, SEEK_HOLE);
        if (hole < 0) io_error("seeking the formatted volume");
        copy_range(from, to, data, hole, offset, buf);
        pos = hole;
    }
}

}  // namespace guestfrag::mkimage
