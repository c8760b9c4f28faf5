// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/cow_disk.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/io/rate_limiter.hpp"

namespace guestfrag {

CopyOnWriteDisk::CopyOnWriteDisk(const DiskImage& base, int scratch_fd, std::string name)
    : base_(base), scratch_(scratch_fd, name), name_(std::move(name)) {}

void CopyOnWriteDisk::check_range(std::uint64_t offset, std::uint64_t length) const {
    if (offset > size() || length > size() - offset)
        throw Error(ErrorKind::Corrupt, "access at offset " + std::to_string(offset) + " runs past the end of the disk");
}

void CopyOnWriteDisk::read(std::uint64_t offset, std::span<std::byte> out) const {
    check_range(offset, out.size());
    if (out.empty()) return;
    using Interval = boost::icl::interval<std::uint64_t>;
    const std::uint64_t end = offset + out.size();
    std::uint64_t at = offset;
    // Alternate between the image (before each written piece) and the scratch (the piece).
    const auto from_image = [&](std::uint64_t to) {
        if (to > at) base_.read(at, out.subspan(at - offset, to - at));
        at = std::max(at, to);
    };
    for (auto it = written_.lower_bound(Interval::right_open(offset, end)); it != written_.end() && it->lower() < end; ++it) {
        const std::uint64_t lo = std::max(it->lower(), offset);
        const std::uint64_t hi = std::min(it->upper(), end);
        from_image(lo);
        scratch_.read(lo, out.subspan(lo - offset, hi - lo));
        at = hi;
    }
    from_image(end);
}

void CopyOnWriteDisk::write(std::uint64_t offset, std::span<const std::byte> bytes) {
    check_range(offset, bytes.size());
    if (bytes.empty()) return;
    scratch_.write(offset, bytes);
    written_ += boost::icl::interval<std::uint64_t>::right_open(offset, offset + bytes.size());
}

OverlayWritten write_qcow2_overlay(const CopyOnWriteDisk& disk, int fd, const std::string& path,
                                   const Qcow2Backing& backing, const Progress& progress, RateLimiter* limiter) {
    constexpr std::uint64_t kCluster = Qcow2OverlayWriter::kClusterSize;
    constexpr std::uint64_t kBatch = 16;  // clusters read at once: 1 MiB reads
    Qcow2OverlayWriter writer(fd, path, disk.size(), backing);
    std::vector<std::byte> now(kBatch * kCluster);
    std::vector<std::byte> was(kBatch * kCluster);
    const std::uint64_t total = boost::icl::length(disk.written());
    std::uint64_t done = 0;
    std::uint64_t next = 0;  // the first cluster not looked at yet: written ranges may share one
    for (const auto& range : disk.written()) {
        progress.update(done, total);
        done += boost::icl::length(range);
        const std::uint64_t end = (range.upper() + kCluster - 1) / kCluster;
        for (std::uint64_t c = std::max(next, range.lower() / kCluster); c < end;) {
            const std::uint64_t at = c * kCluster;
            const std::uint64_t clusters = std::min(kBatch, end - c);
            const std::uint64_t n = std::min(clusters * kCluster, disk.size() - at);
            if (limiter != nullptr) limiter->acquire(n, progress.stop);
            progress.update(done, total);
            // The disk's last cluster may be partial: the rest is zero in both buffers.
            if (n < clusters * kCluster) {
                std::fill(now.begin(), now.end(), std::byte{0});
                std::fill(was.begin(), was.end(), std::byte{0});
            }
            disk.read(at, std::span(now).first(n));
            disk.base().read(at, std::span(was).first(n));
            for (std::uint64_t i = 0; i < clusters; ++i) {
                const auto cluster = std::span(now).subspan(i * kCluster, kCluster);
                if (!std::equal(cluster.begin(), cluster.end(), was.begin() + static_cast<std::ptrdiff_t>(i * kCluster)))
                    writer.write_cluster(c + i, cluster);
            }
            c += clusters;
            next = c;
        }
    }
    progress.update(total, total);
    return {writer.clusters_stored(), writer.finish()};
}

}  // namespace guestfrag
