// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/host_layout.hpp"

#include <algorithm>

namespace guestfrag {

void append_host_extent(std::vector<HostExtent>& extents, const HostExtent& piece) {
    if (!extents.empty()) {
        HostExtent& last = extents.back();
        if (last.file == piece.file && last.virtual_offset + last.length == piece.virtual_offset &&
            last.file_offset + last.length == piece.file_offset) {
            last.length += piece.length;
            return;
        }
    }
    extents.push_back(piece);
}

HostLayout analyze_host_layout(const Layer& layer, std::uint64_t begin, std::uint64_t end) {
    HostLayout out;
    if (begin >= end) return out;
    const std::uint64_t unit = std::max<std::uint64_t>(layer.growth_granule(), 1);
    const HostExtent* previous = nullptr;
    std::uint64_t previous_end_file = 0;
    std::uint64_t last_unit_counted = 0;
    // First extent ending after `begin`: host_extents is sorted by virtual offset.
    auto it = std::ranges::upper_bound(layer.host_extents, begin, {},
                                       [](const HostExtent& e) { return e.virtual_offset + e.length; });
    for (; it != layer.host_extents.end() && it->virtual_offset < end; ++it) {
        const std::uint64_t lo = std::max(it->virtual_offset, begin);
        const std::uint64_t hi = std::min(it->virtual_offset + it->length, end);
        const std::uint64_t file_lo = it->file_offset + (lo - it->virtual_offset);
        out.stored_bytes += hi - lo;
        ++out.extents;
        if (previous != nullptr) {
            const bool same_file = previous->file == it->file;
            const bool backward = same_file && file_lo < previous_end_file;
            if (!same_file || backward || file_lo - previous_end_file > kHostSeekGap) ++out.seeks;
            if (backward) ++out.backward_seeks;
        }
        // Growth units this extent touches that an earlier one has not.
        const std::uint64_t first_unit = lo / unit;
        const std::uint64_t last_unit = (hi - 1) / unit;
        const std::uint64_t from =
            previous != nullptr ? std::max(first_unit, last_unit_counted + 1) : first_unit;
        if (from <= last_unit) out.granules += last_unit - from + 1;
        last_unit_counted = std::max(last_unit_counted, last_unit);
        previous = &*it;
        previous_end_file = file_lo + (hi - lo);
    }
    const auto in_range = ByteSet::interval_type::right_open(begin, end);
    out.unplaced_bytes = boost::icl::length(layer.allocated & in_range) - out.stored_bytes;
    // Several seeks can fall inside one unit (the sector runs of a VHD differencing
    // block), so the share is bounded by the seeks themselves.
    const std::uint64_t steps = std::max(out.seeks, out.granules > 0 ? out.granules - 1 : 0);
    if (steps > 0)
        out.fragmentation_percent = 100.0 * static_cast<double>(out.seeks) / static_cast<double>(steps);
    return out;
}

}  // namespace guestfrag
