// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/fingerprint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/image/nbd_source.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/unique_fd.hpp"
#include "core/io/xxh3.hpp"

namespace guestfrag::batch {

namespace {

std::string hash_text(const void* data, std::size_t size) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(data, size)));
    return hex;
}

constexpr std::size_t kHeadBytes = 64 * 1024;

/// An NBD export has no modification time: its size and first bytes stand for it.
Fingerprint remote_fingerprint(const std::string& uri) {
    const auto source = NbdSource::open(uri);
    std::vector<std::byte> head(static_cast<std::size_t>(std::min<std::uint64_t>(source->size(), kHeadBytes)));
    read_fully(*source, 0, head);
    Fingerprint fp;
    fp.size = source->size();
    fp.header_hash = hash_text(head.data(), head.size());
    return fp;
}

}  // namespace

Fingerprint fingerprint(const std::string& path) {
    if (is_nbd_uri(path)) return remote_fingerprint(path);
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and a
    // blocked open() holds the batch worker past SIGINT/SIGTERM. It changes nothing for
    // the regular files and block devices that are read below.
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) throw Error(errno == ENOENT ? ErrorKind::NotFound : ErrorKind::Io, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw Error(ErrorKind::Io, std::strerror(errno));
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        throw Error(ErrorKind::Unsupported, "not a regular file or block device");
    std::vector<char> head(kHeadBytes);
    const ssize_t n = ::pread(fd.get(), head.data(), head.size(), 0);
    if (n < 0) throw Error(ErrorKind::Io, std::strerror(errno));
    Fingerprint fp;
    fp.size = static_cast<std::uint64_t>(st.st_size);
    fp.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    fp.header_hash = hash_text(head.data(), static_cast<std::size_t>(n));
    return fp;
}

}  // namespace guestfrag::batch
