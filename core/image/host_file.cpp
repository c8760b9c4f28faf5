// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/host_file.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace guestfrag {
namespace {

[[noreturn]] void io_error(const std::string& what) { throw Error(ErrorKind::Io, what + ": " + std::strerror(errno)); }

void pread_all(int fd, std::uint64_t offset, std::span<std::byte> out) {
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            io_error("read failed at offset " + std::to_string(offset + done));
        }
        if (n == 0) throw Error(ErrorKind::Io, "file shrank while reading it");
        done += static_cast<std::size_t>(n);
    }
}

}  // namespace

HostFile::HostFile(std::string path) : path_(std::move(path)) {
    fd_.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_) {
        if (errno == ENOENT) throw Error(ErrorKind::NotFound, "no such file: " + path_);
        io_error("cannot open " + path_);
    }
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) io_error("cannot stat " + path_);
    if (S_ISREG(st.st_mode)) {
        size_ = static_cast<std::uint64_t>(st.st_size);
    } else if (S_ISBLK(st.st_mode)) {
        if (::ioctl(fd_.get(), BLKGETSIZE64, &size_) != 0) io_error("cannot size " + path_);
    } else {
        throw Error(ErrorKind::Unsupported, path_ + " is not a regular file or block device");
    }
}

void HostFile::read_exact(std::uint64_t offset, std::span<std::byte> out, const char* what) const {
    if (offset > size_ || out.size() > size_ - offset)
        throw Error(ErrorKind::Corrupt, std::string(what) + " at offset " + std::to_string(offset) +
                                            " lies past the end of the file (" + std::to_string(size_) + " bytes)");
    pread_all(fd_.get(), offset, out);
}

void HostFile::read_padded(std::uint64_t offset, std::span<std::byte> out) const {
    const std::uint64_t available = offset >= size_ ? 0 : std::min<std::uint64_t>(out.size(), size_ - offset);
    pread_all(fd_.get(), offset, out.first(static_cast<std::size_t>(available)));
    std::memset(out.data() + available, 0, out.size() - available);
}

}  // namespace guestfrag
