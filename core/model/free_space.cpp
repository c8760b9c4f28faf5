// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/model/free_space.hpp"

#include <array>
#include <bit>
#include <limits>

namespace guestfrag {

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) { return b > kMax - a ? kMax : a + b; }

std::uint64_t mul_saturating(std::uint64_t a, std::uint64_t b) {
    return a != 0 && b > kMax / a ? kMax : a * b;
}

/// docs/design.md §3's table, one "≤ limit" row each.
struct PenaltyRow {
    std::uint64_t limit;
    int penalty;
};
constexpr std::array<PenaltyRow, 14> kPenalties{{
    {1 * KiB, 100},
    {2 * KiB, 98},
    {4 * KiB, 95},
    {8 * KiB, 90},
    {16 * KiB, 80},
    {32 * KiB, 70},
    {64 * KiB, 60},
    {128 * KiB, 50},
    {256 * KiB, 40},
    {512 * KiB, 30},
    {1 * MiB, 20},
    {2 * MiB, 15},
    {4 * MiB, 10},
    {8 * MiB, 5},
}};
/// From here on an extent costs nothing ("≥ 16M 0").
constexpr std::uint64_t kFreeOfPenalty = 16 * MiB;
/// Extents above the last "≤" row but below kFreeOfPenalty keep that row's penalty.
constexpr int kBetweenPenalty = 5;

}  // namespace

int zfs_free_extent_penalty(std::uint64_t bytes) {
    for (const PenaltyRow& row : kPenalties) {
        if (bytes <= row.limit) return row.penalty;
    }
    return bytes < kFreeOfPenalty ? kBetweenPenalty : 0;
}

std::uint64_t FreeSpacePenalty::weighted(std::uint64_t clusters) const noexcept {
    return mul_saturating(clusters,
                          static_cast<std::uint64_t>(zfs_free_extent_penalty(mul_saturating(clusters, cluster_size_))));
}

void FreeSpacePenalty::add(std::uint64_t clusters) noexcept {
    clusters_ = add_saturating(clusters_, clusters);
    weighted_ = add_saturating(weighted_, weighted(clusters));
}

void FreeSpacePenalty::remove(std::uint64_t clusters) noexcept {
    clusters_ -= clusters;
    weighted_ -= weighted(clusters);
}

double FreeSpacePenalty::percent() const noexcept {
    if (clusters_ == 0 || cluster_size_ == 0) return 0;
    return static_cast<double>(static_cast<long double>(weighted_) / static_cast<long double>(clusters_));
}

FreeSpaceFragmentation analyze_free_space(const VolumeMap& volume) {
    FreeSpaceFragmentation out;

    // Bucket k holds extents of [2^k, 2^(k+1)) bytes.
    std::array<FreeExtentBucket, std::numeric_limits<std::uint64_t>::digits> buckets{};
    FreeSpacePenalty penalty(volume.cluster_size);

    for (const auto& interval : volume.free) {
        const std::int64_t length = boost::icl::length(interval);
        if (length <= 0) continue;
        const auto clusters = static_cast<std::uint64_t>(length);
        ++out.extents;
        out.free_clusters = add_saturating(out.free_clusters, clusters);
        if (clusters > out.largest_extent_clusters) out.largest_extent_clusters = clusters;

        const std::uint64_t bytes = mul_saturating(clusters, volume.cluster_size);
        if (bytes == 0) continue;  // no cluster size: nothing to weigh or bucket
        FreeExtentBucket& bucket = buckets[static_cast<std::size_t>(std::bit_width(bytes) - 1)];
        ++bucket.extents;
        bucket.bytes = add_saturating(bucket.bytes, bytes);
        penalty.add(clusters);
    }

    if (out.extents != 0) {
        out.average_extent_clusters = static_cast<double>(static_cast<long double>(out.free_clusters) /
                                                          static_cast<long double>(out.extents));
    }
    out.fragmentation_percent = penalty.percent();

    for (std::size_t k = 0; k < buckets.size(); ++k) {
        if (buckets[k].extents == 0) continue;
        buckets[k].min_bytes = std::uint64_t{1} << k;
        out.histogram.push_back(buckets[k]);
    }
    return out;
}

}  // namespace guestfrag
