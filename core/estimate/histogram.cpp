// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/histogram.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "core/error.hpp"

namespace guestfrag {

namespace {

// vscsiStats' buckets, as ESXi prints them (docs/design.md §4). The odd limits (4095, 8191, ...)
// separate IOs just below a power of two from the aligned sizes.
// clang-format off
constexpr std::array<std::int64_t, 17> kIoLengthLimits = {
    512, 1024, 2048, 4095, 4096, 8191, 8192, 16383, 16384, 32768, 49152, 65535, 65536, 81920, 131072, 262144, 524288,
};

constexpr std::array<std::int64_t, 33> kSeekDistanceLimits = {
    -500000, -100000, -50000, -10000, -5000, -1000, -500, -128, -64, -32, -16, -8, -6, -4, -2, -1, 0,
    1,       2,       4,      6,      8,     16,    32,   64,   128, 500, 1000, 5000, 10000, 50000, 100000, 500000,
};
// clang-format on

}  // namespace

Histogram::Histogram(std::vector<std::int64_t> limits)
    : limits_(std::move(limits)), counts_(limits_.size() + 1) {
    if (limits_.empty() ||
        std::adjacent_find(limits_.begin(), limits_.end(), std::greater_equal<>()) != limits_.end())
        throw Error(ErrorKind::Internal, "histogram limits must be strictly ascending");
}

std::size_t Histogram::bucket_of(std::int64_t value) const {
    return static_cast<std::size_t>(std::lower_bound(limits_.begin(), limits_.end(), value) -
                                    limits_.begin());
}

void Histogram::add(std::int64_t value, std::uint64_t times) { counts_[bucket_of(value)] += times; }

void Histogram::merge(const Histogram& other) {
    if (other.limits_ != limits_)
        throw Error(ErrorKind::Internal, "merging histograms with different limits");
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
}

void Histogram::clear() { std::fill(counts_.begin(), counts_.end(), 0); }

std::uint64_t Histogram::total() const noexcept {
    return std::accumulate(counts_.begin(), counts_.end(), std::uint64_t{0});
}

std::span<const std::int64_t> io_length_limits() noexcept { return kIoLengthLimits; }
std::span<const std::int64_t> seek_distance_limits() noexcept { return kSeekDistanceLimits; }

Histogram io_length_histogram() { return Histogram({kIoLengthLimits.begin(), kIoLengthLimits.end()}); }
Histogram seek_distance_histogram() {
    return Histogram({kSeekDistanceLimits.begin(), kSeekDistanceLimits.end()});
}

}  // namespace guestfrag
