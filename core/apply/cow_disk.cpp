// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/cow_disk.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/io/rate_limiter.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kCluster = Qcow2OverlayWriter::kClusterSize;

}  // namespace

CopyOnWriteDisk::CopyOnWriteDisk(const DiskImage& base, Qcow2OverlayWriter& overlay, RateLimiter* limiter)
    : base_(base), overlay_(overlay), limiter_(limiter) {}

void CopyOnWriteDisk::check_range(std::uint64_t offset, std::uint64_t length) const {
    if (offset > size() || length > size() - offset)
        throw Error(ErrorKind::Corrupt, "access at offset " + std::to_string(offset) + " runs past the end of the disk");
}

void CopyOnWriteDisk::read(std::uint64_t offset, std::span<std::byte> out) const {
    check_range(offset, out.size());
    const std::uint64_t end = offset + out.size();
    for (std::uint64_t at = offset; at < end;) {
        // One read for each run of clusters that lie together: unstored ones in the image,
        // stored ones in consecutive data clusters of the overlay.
        const std::optional<std::uint64_t> first = overlay_.stored_at(at / kCluster);
        std::uint64_t to = std::min(end, (at / kCluster + 1) * kCluster);
        while (to < end) {
            const std::optional<std::uint64_t> next = overlay_.stored_at(to / kCluster);
            if (next.has_value() != first.has_value() || (first && *next != *first + (to - at / kCluster * kCluster)))
                break;
            to = std::min(end, to + kCluster);
        }
        const auto piece = out.subspan(at - offset, to - at);
        if (first)
            overlay_.file().read(*first + at % kCluster, piece);
        else
            base_.read(at, piece);
        at = to;
    }
}

void CopyOnWriteDisk::write(std::uint64_t offset, std::span<const std::byte> bytes) {
    check_range(offset, bytes.size());
    std::vector<std::byte> cluster;
    const std::uint64_t end = offset + bytes.size();
    for (std::uint64_t at = offset; at < end;) {
        const std::uint64_t index = at / kCluster;
        const std::uint64_t to = std::min(end, (index + 1) * kCluster);
        const auto piece = bytes.subspan(at - offset, to - at);
        if (const auto stored = overlay_.stored_at(index)) {
            overlay_.file().write(*stored + at % kCluster, piece);
        } else {
            // The cluster's first write: the overlay's copy is the image's cluster with
            // this piece over it (the disk's last cluster may be partial: zeros after it).
            const std::uint64_t start = index * kCluster;
            const std::uint64_t present = std::min(kCluster, size() - start);
            cluster.assign(kCluster, std::byte{0});
            if (piece.size() < present) {
                if (limiter_ != nullptr) limiter_->acquire(present);
                base_.read(start, std::span(cluster).first(present));
            }
            std::copy(piece.begin(), piece.end(), cluster.begin() + static_cast<std::ptrdiff_t>(at - start));
            overlay_.write_cluster(index, cluster);
        }
        at = to;
    }
}

std::uint64_t CopyOnWriteDisk::release_unchanged() {
    std::vector<std::byte> ours(kCluster);
    std::vector<std::byte> theirs(kCluster);
    std::uint64_t released = 0;
    for (const std::uint64_t index : overlay_.stored_clusters()) {
        const std::uint64_t start = index * kCluster;
        const std::uint64_t present = std::min(kCluster, size() - start);
        overlay_.file().read(*overlay_.stored_at(index), std::span(ours).first(present));
        base_.read(start, std::span(theirs).first(present));
        if (std::memcmp(ours.data(), theirs.data(), present) != 0) continue;
        overlay_.release(index);
        ++released;
    }
    return released;
}

}  // namespace guestfrag
