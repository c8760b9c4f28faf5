// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/sparsify.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/io/zero_bytes.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kChunk = 1 << 20;

[[noreturn]] void host_failure(const std::string& what, const std::string& path) {
    throw Error(ErrorKind::Io, "cannot " + what + " " + path + ": " + std::strerror(errno));
}

/// Frees [offset, offset + length) of the file, or writes zeros there without `holes`.
void discard_range(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length, bool holes) {
    if (holes) {
        if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                        static_cast<off_t>(length)) != 0)
            host_failure("punch a hole in", path);
        return;
    }
    static const std::vector<std::byte> zeros(kChunk);
    for (std::uint64_t done = 0; done < length;) {
        const std::uint64_t n = std::min<std::uint64_t>(kChunk, length - done);
        const ssize_t put = ::pwrite(fd, zeros.data(), n, static_cast<off_t>(offset + done));
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) host_failure("write", path);
        done += static_cast<std::uint64_t>(put);
    }
}

}  // namespace

bool can_punch_holes(int fd) {
    if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1) == 0) return true;
    if (errno == EOPNOTSUPP || errno == ENOSYS) return false;
    throw Error(ErrorKind::Io, std::string("cannot punch a hole: ") + std::strerror(errno));
}

void discard_stored(int fd, const std::string& path, std::uint64_t size, const ByteSet& discard, bool holes) {
    for (const auto& range : host_stored_ranges(fd, size, discard))
        discard_range(fd, path, range.lower(), boost::icl::length(range), holes);
}

ByteSet discard_zero_blocks(int fd, const std::string& path, std::uint64_t size, const ByteSet& within,
                            std::uint64_t block, bool holes, const Progress& progress) {
    if (block == 0 || kChunk % block != 0)
        throw Error(ErrorKind::Internal, "discard_zero_blocks: bad block size");
    ByteSet blocks;
    for (const auto& r : within)
        blocks += ByteSet::interval_type::right_open(r.lower() / block * block,
                                                     std::min(size, (r.upper() + block - 1) / block * block));
    ByteSet kept;
    std::vector<std::byte> chunk(kChunk);
    for (const auto& range : host_stored_ranges(fd, size, blocks)) {
        // Whole blocks: a stored range starts and ends where the file system's blocks do.
        const std::uint64_t end = std::min(size, (range.upper() + block - 1) / block * block);
        for (std::uint64_t at = range.lower() / block * block; at < end;) {
            progress.update(at, size);
            const std::uint64_t n = std::min(kChunk - at % kChunk, end - at);
            for (std::uint64_t got = 0; got < n;) {
                const ssize_t r = ::pread(fd, chunk.data() + got, n - got, static_cast<off_t>(at + got));
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) host_failure("read", path);
                got += static_cast<std::uint64_t>(r);
            }
            for (std::uint64_t b = 0; b < n; b += block) {
                const std::uint64_t len = std::min(block, n - b);
                if (all_zero(std::span<const std::byte>(chunk.data() + b, len)))
                    discard_range(fd, path, at + b, len, holes);
                else
                    kept += ByteSet::interval_type::right_open(at + b, at + b + len);
            }
            at += n;
        }
    }
    progress.update(size, size);
    return kept;
}

}  // namespace guestfrag
