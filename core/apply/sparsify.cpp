// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/sparsify.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
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

Discards::Discards(int fd, std::string path, std::uint64_t size, bool holes)
    : fd_(fd), path_(std::move(path)), size_(size), holes_(holes) {}

void Discards::stored(const ByteSet& discard) {
    const ByteSet stored = host_stored_ranges(fd_, size_, discard);
    added_ += stored;
    pending_ += stored;
}

ByteSet Discards::zero_blocks(const ByteSet& within, std::uint64_t block, const Progress& progress) {
    if (block == 0 || kChunk % block != 0) throw Error(ErrorKind::Internal, "Discards: bad block size");
    ByteSet blocks;
    for (const auto& r : within)
        blocks += ByteSet::interval_type::right_open(
            r.lower() / block * block, std::min(size_, (r.upper() + block - 1) / block * block));
    ByteSet kept;
    ByteSet zero;
    std::vector<std::byte> chunk(kChunk);
    for (const auto& range : host_stored_ranges(fd_, size_, blocks)) {
        // Whole blocks: a stored range starts and ends where the file system's blocks do.
        const std::uint64_t end = std::min(size_, (range.upper() + block - 1) / block * block);
        for (std::uint64_t at = range.lower() / block * block; at < end;) {
            progress.update(at, size_);
            const std::uint64_t n = std::min(kChunk - at % kChunk, end - at);
            for (std::uint64_t got = 0; got < n;) {
                const ssize_t r = ::pread(fd_, chunk.data() + got, n - got, static_cast<off_t>(at + got));
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) host_failure("read", path_);
                got += static_cast<std::uint64_t>(r);
            }
            // What was added reads as zeros once freed, which may not have happened yet.
            const auto read = ByteSet::interval_type::right_open(at, at + n);
            const auto [first, last] = added_.equal_range(read);
            for (auto it = first; it != last; ++it) {
                const auto part = *it & read;
                std::memset(chunk.data() + (part.lower() - at), 0, boost::icl::length(part));
            }
            for (std::uint64_t b = 0; b < n; b += block) {
                const std::uint64_t len = std::min(block, n - b);
                (all_zero(std::span<const std::byte>(chunk.data() + b, len)) ? zero : kept) +=
                    ByteSet::interval_type::right_open(at + b, at + b + len);
            }
            at += n;
        }
    }
    progress.update(size_, size_);
    added_ += zero;
    pending_ += zero;
    return kept;
}

void Discards::start() {
    if (pending_.empty()) return;
    // Ranges that follow each other are one interval of the set, so one punch: each punch
    // waits for its own discard.
    freeing_.push_back(std::async(std::launch::async, [this, ranges = std::move(pending_)] {
        for (const auto& r : ranges) discard_range(fd_, path_, r.lower(), boost::icl::length(r), holes_);
    }));
    pending_.clear();
}

void Discards::finish() {
    start();
    for (std::future<void>& f : freeing_) f.get();
    freeing_.clear();
}

}  // namespace guestfrag
