// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace guestfrag {

/// Counts of values in fixed buckets, vscsiStats style: bucket i holds the values
/// v ≤ limits[i] (and > limits[i−1]); the extra last bucket holds v > limits.back(), so
/// counts() has one more entry than limits(). Plain and mergeable (LevelDB
/// util/histogram): add values, merge histograms with the same limits. O(log limits) per add.
class Histogram {
public:
    /// `limits` must be strictly ascending and non-empty; otherwise Error(Internal).
    explicit Histogram(std::vector<std::int64_t> limits);

    /// Counts `value` `times` times.
    void add(std::int64_t value, std::uint64_t times = 1);
    /// Adds `other`'s counts; its limits must equal ours (Error(Internal) otherwise).
    void merge(const Histogram& other);
    void clear();

    /// Index of the bucket `value` falls in: the first limit ≥ value, or limits().size().
    [[nodiscard]] std::size_t bucket_of(std::int64_t value) const;
    [[nodiscard]] const std::vector<std::int64_t>& limits() const noexcept { return limits_; }
    [[nodiscard]] const std::vector<std::uint64_t>& counts() const noexcept { return counts_; }
    /// Sum of all counts.
    [[nodiscard]] std::uint64_t total() const noexcept;

    friend bool operator==(const Histogram&, const Histogram&) = default;

private:
    std::vector<std::int64_t> limits_;
    std::vector<std::uint64_t> counts_;
};

/// vscsiStats ioLength bucket limits in bytes (docs/design.md §4): 512 … 524288, then "> 524288".
[[nodiscard]] std::span<const std::int64_t> io_length_limits() noexcept;
/// vscsiStats seekDistance bucket limits in sectors (docs/design.md §4): −500000 … 500000.
[[nodiscard]] std::span<const std::int64_t> seek_distance_limits() noexcept;

/// An empty histogram with io_length_limits().
[[nodiscard]] Histogram io_length_histogram();
/// An empty histogram with seek_distance_limits().
[[nodiscard]] Histogram seek_distance_histogram();

}  // namespace guestfrag
