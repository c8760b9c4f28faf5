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
    // Writes block bytes [from, from + length), which go to disk offset `at` + from.
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
    // Copies the image's bytes [from, from + length) to disk offset `to`.
    const auto copy = [&](std::uint64_t to, std::uint64_t from, std::uint64_t length) {
        for (std::uint64_t at = to; at < to + length;) {
            progress.update(at, size);
            // Reads end on 1 MiB boundaries of the copy, so each hole block lies in one read.
            const std::uint64_t n = std::min(kBlock - at % kBlock, to + length - at);
            if (limiter != nullptr) {
                limiter->acquire(n, progress.stop);
                progress.update(at, size);  // a stop ends the wait: cancel now
            }
            image.read(from + (at - to), std::span<std::byte>(block.data(), n));
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
    };
    auto moved = options.relocated.begin();
    for (const auto& range : stored) {
        for (; moved != options.relocated.end() && moved->to < range.lower(); ++moved)
            copy(moved->to, moved->from, moved->length);
        copy(range.lower(), range.lower(), boost::icl::length(range));
    }
    for (; moved != options.relocated.end(); ++moved) copy(moved->to, moved->from, moved->length);
    progress.update(size, size);
    return out;
}

void DeferredCopyDisk::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (out.empty()) return;
    const std::uint64_t end = offset + out.size();
    std::uint64_t at = offset;
    const auto [first, last] = deferred_.equal_range(ByteSet::interval_type::right_open(offset, end));
    for (auto it = first; it != last; ++it) {
        const std::uint64_t lo = std::max(at, it->lower());
        const std::uint64_t hi = std::min(end, it->upper());
        if (lo > at) file_.read(at, out.subspan(at - offset, lo - at));
        image_.read(lo, out.subspan(lo - offset, hi - lo));
        at = hi;
    }
    if (end > at) file_.read(at, out.subspan(at - offset, end - at));
}

void DeferredCopyDisk::write(std::uint64_t offset, std::span<const std::byte> bytes) {
    file_.write(offset, bytes);
    deferred_ -= ByteSet::interval_type::right_open(offset, offset + bytes.size());
}

std::uint64_t DeferredCopyDisk::copy(const ByteSet& bytes) {
    std::uint64_t copied = 0;
    std::vector<std::byte> block;
    for (const auto& range : deferred_ & bytes)
        for (std::uint64_t at = range.lower(); at < range.upper();) {
            const std::uint64_t n = std::min(kBlock, range.upper() - at);
            block.resize(n);
            image_.read(at, block);
            write(at, block);
            at += n;
            copied += n;
        }
    return copied;
}

}  // namespace guestfrag
