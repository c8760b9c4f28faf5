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

namespace guestfrag {
namespace {

constexpr std::uint64_t kBlock = 1 << 20;

[[noreturn]] void host_failure(const std::string& what) {
    throw Error(ErrorKind::Io, what + ": " + std::strerror(errno));
}

}  // namespace

std::uint64_t copy_disk_sparse(const DiskImage& image, int fd, const Progress& progress, RateLimiter* limiter,
                               const ByteSet* only) {
    if (::ftruncate(fd, static_cast<off_t>(image.size())) != 0) host_failure("cannot size the new disk");
    // Elsewhere the disk reads as zero already, as the new sparse file does.
    ByteSet stored = image.stored();
    stored &= ByteSet(boost::icl::interval<std::uint64_t>::right_open(0, image.size()));
    if (only != nullptr) stored &= *only;
    std::vector<std::byte> block(kBlock);
    std::uint64_t written = 0;
    for (const auto& range : stored) {
        for (std::uint64_t at = range.lower(); at < range.upper();) {
            progress.update(at, image.size());
            const std::uint64_t n = std::min(kBlock, range.upper() - at);
            if (limiter != nullptr) {
                limiter->acquire(n, progress.stop);
                progress.update(at, image.size());  // a stop ends the wait: cancel now
            }
            const std::span<std::byte> chunk(block.data(), n);
            image.read(at, chunk);
            const bool zero =
                std::all_of(chunk.begin(), chunk.end(), [](std::byte b) { return b == std::byte{0}; });
            for (std::uint64_t done = 0; !zero && done < n;) {
                const ssize_t put =
                    ::pwrite(fd, chunk.data() + done, n - done, static_cast<off_t>(at + done));
                if (put < 0 && errno == EINTR) continue;
                if (put <= 0) host_failure("cannot write the new disk");
                done += static_cast<std::uint64_t>(put);
            }
            if (!zero) written += n;
            at += n;
        }
    }
    progress.update(image.size(), image.size());
    return written;
}

}  // namespace guestfrag
