// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/writable_raw_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace guestfrag {
namespace {

// pread() and pwrite() may transfer less than asked, and at most ~2 GiB on Linux.
constexpr std::size_t kMaxChunk = std::size_t{1} << 30;

/// The path is in the message: a failed write (no space left) is about the output file, not
/// the image the caller reports on.
[[noreturn]] void os_error(const char* what, const std::string& path, std::uint64_t offset) {
    throw Error(ErrorKind::Io, std::string("cannot ") + what + " " + path + " at offset " +
                                   std::to_string(offset) + ": " + std::strerror(errno));
}

}  // namespace

WritableRawFile::WritableRawFile(int fd, std::string path, bool record_writes)
    : fd_(fd), path_(std::move(path)), record_writes_(record_writes) {
    // Its readers (libntfs-3g, the mover) read a record or a run at a time, scattered over a
    // sparse file. The kernel's read-ahead around each read would fill the holes beside it
    // into the page cache as zeroed pages: 22 % of an apply of 300,000 moves was that memset
    // (docs/benchmarks.md). A hint only: a file system without it reads as before.
    (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_RANDOM);
}

void WritableRawFile::read(std::uint64_t offset, std::span<std::byte> out) const {
    std::size_t done = 0;
    while (done < out.size()) {
        const std::size_t want = std::min(out.size() - done, kMaxChunk);
        const ssize_t got = ::pread(fd_, out.data() + done, want, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) os_error("read", path_, offset + done);
        if (got == 0)
            throw Error(ErrorKind::Corrupt, "read at offset " + std::to_string(offset + done) +
                                                " runs past the end of the file");
        done += static_cast<std::size_t>(got);
    }
}

void WritableRawFile::write(std::uint64_t offset, std::span<const std::byte> bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const std::size_t want = std::min(bytes.size() - done, kMaxChunk);
        const ssize_t put = ::pwrite(fd_, bytes.data() + done, want, static_cast<off_t>(offset + done));
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) os_error("write", path_, offset + done);
        done += static_cast<std::size_t>(put);
    }
    if (record_writes_ && !bytes.empty()) written_ += ByteSet::interval_type::right_open(offset, offset + bytes.size());
}

}  // namespace guestfrag
