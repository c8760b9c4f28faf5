// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/written_map.hpp"

#include <algorithm>

namespace guestfrag {

namespace {

using Blocks = boost::icl::interval_set<std::uint64_t>;

}  // namespace

WrittenMap::WrittenMap(std::uint64_t block_bytes) : block_(block_bytes == 0 ? kSectorBytes : block_bytes) {}

WrittenMap WrittenMap::from_layer(const Layer& layer, std::uint64_t block_bytes) {
    WrittenMap map(block_bytes);
    for (const auto& range : layer.allocated) {
        // Runs arrive in address order: appending at the end keeps this linear.
        const std::uint64_t first = range.lower() / map.block_;
        const std::uint64_t end = range.upper() / map.block_ + (range.upper() % map.block_ != 0 ? 1 : 0);
        map.blocks_.add(map.blocks_.end(), Blocks::interval_type::right_open(first, end));
    }
    return map;
}

std::uint64_t WrittenMap::replay(const Io& io) {
    if (!io.write || io.length == 0 || io.lbn < 0) return 0;
    const std::uint64_t start = static_cast<std::uint64_t>(io.lbn) * kSectorBytes;
    const std::uint64_t first = start / block_;
    const std::uint64_t last = (start + io.length - 1) / block_;
    const auto touched = Blocks::interval_type::closed(first, last);
    // Only the runs that overlap the IO, found by lookup (`blocks_ & touched` would copy
    // the whole set for every IO).
    std::uint64_t already = 0;
    const auto [from, to] = blocks_.equal_range(touched);
    for (auto run = from; run != to; ++run)
        already += boost::icl::length(*run & touched);
    blocks_ += touched;
    return (last - first + 1) - already;
}

std::uint64_t WrittenMap::bytes_in_written(const Io& io) const {
    if (io.length == 0 || io.lbn < 0) return 0;
    const std::uint64_t start = static_cast<std::uint64_t>(io.lbn) * kSectorBytes;
    const std::uint64_t end = start + io.length;
    const auto touched = Blocks::interval_type::closed(start / block_, (end - 1) / block_);
    std::uint64_t bytes = 0;
    const auto [from, to] = blocks_.equal_range(touched);
    for (auto run = from; run != to; ++run) {
        // The run's blocks as bytes, clipped to the IO.
        const auto blocks = *run & touched;
        const std::uint64_t lo = std::max(start, boost::icl::first(blocks) * block_);
        const std::uint64_t hi = std::min(end, (boost::icl::last(blocks) + 1) * block_);
        bytes += hi - lo;
    }
    return bytes;
}

}  // namespace guestfrag
