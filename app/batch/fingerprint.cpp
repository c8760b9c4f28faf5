// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/fingerprint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <xxhash.h>

#include "core/error.hpp"
#include "core/image/unique_fd.hpp"

namespace guestfrag::batch {

Fingerprint fingerprint(const std::string& path) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and a
    // blocked open() holds the batch worker past SIGINT/SIGTERM. It changes nothing for
    // the regular files and block devices that are read below.
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) throw Error(errno == ENOENT ? ErrorKind::NotFound : ErrorKind::Io, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw Error(ErrorKind::Io, std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        throw Error(ErrorKind::Unsupported, "not a regular file or block device");
    std::vector<char> head(64 * 1024);
    const ssize_t n = ::pread(fd.get(), head.data(), head.size(), 0);
    if (n < 0) throw Error(ErrorKind::Io, std::strerror(errno));
    Fingerprint fp;
    fp.size = static_cast<std::uint64_t>(st.st_size);
    fp.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(XXH3_64bits(head.data(), static_cast<std::size_t>(n))));
    fp.header_hash = hex;
    return fp;
}

}  // namespace guestfrag::batch
