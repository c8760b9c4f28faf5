// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/disk_copy.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/io/zero_bytes.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kBlock = 1 << 20;

[[noreturn]] void host_failure(const std::string& what) {
    throw Error(ErrorKind::Io, what + ": " + std::strerror(errno));
}

}  // namespace

SparseCopy copy_disk_sparse(const DiskImage& image, int fd, const Progress& progress, RateLimiter* limiter,
                            const SparseCopyOptions& options) {
    const std::uint64_t hole = options.hole_block;
    if (hole == 0 || (hole & (hole - 1)) != 0 || kBlock % hole != 0)
        throw Error(ErrorKind::Internal, "copy_disk_sparse: bad hole block");
    const std::uint64_t size = image.size();
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) host_failure("cannot size the new disk");
    // Elsewhere the disk reads as zero already, as the new sparse file does.
    ByteSet stored = image.stored();
    stored &= ByteSet(ByteSet::interval_type::right_open(0, size));
    if (options.only != nullptr) stored &= *options.only;
    std::vector<std::byte> block(kBlock);
    SparseCopy out;
    // Writes chunk bytes [from, from + length) read from disk offset `at`.
    const auto put = [&](std::uint64_t at, std::uint64_t from, std::uint64_t length) {
        for (std::uint64_t done = 0; done < length;) {
            const ssize_t n = ::pwrite(fd, block.data() + from + done, length - done,
                                       static_cast<off_t>(at + from + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) host_failure("cannot write the new disk");
            done += static_cast<std::uint64_t>(n);
        }
        out.bytes_written += length;
        const std::uint64_t lo = (at + from) / hole * hole;
        out.blocks += ByteSet::interval_type::right_open(lo, std::min(size, (at + from + length + hole - 1) / hole * hole));
    };
    for (const auto& range : stored) {
        for (std::uint64_t at = range.lower(); at < range.upper();) {
            progress.update(at, size);
            // Reads end on 1 MiB boundaries, so each hole block lies in one read.
            const std::uint64_t n = std::min(kBlock - at % kBlock, range.upper() - at);
            if (limiter != nullptr) {
                limiter->acquire(n, progress.stop);
                progress.update(at, size);  // a stop ends the wait: cancel now
            }
            image.read(at, std::span<std::byte>(block.data(), n));
            std::uint64_t run = 0;  // the non-zero bytes not yet written: [run, off)
            std::uint64_t off = 0;
            while (off < n) {
                const std::uint64_t len = std::min(hole - (at + off) % hole, n - off);
                if (all_zero(std::span<const std::byte>(block.data() + off, len))) {
                    if (off > run) put(at, run, off - run);
                    run = off + len;
                }
                off += len;
            }
            if (n > run) put(at, run, n - run);
            at += n;
        }
    }
    progress.update(size, size);
    return out;
}

}  // namespace guestfrag
