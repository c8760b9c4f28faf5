// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/gui/extent_index.hpp"

#include <algorithm>

namespace guestfrag::gui {

ExtentIndex::ExtentIndex(const VolumeMap& volume) {
    for (std::size_t i = 0; i < volume.streams.size(); ++i)
        for (const Extent& e : volume.streams[i].extents)
            if (e.lcn != Extent::kSparse && e.clusters > 0) entries_.push_back({e.lcn, e.lcn + e.clusters, i});
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.lcn < b.lcn; });
}

std::vector<std::size_t> ExtentIndex::streams_in(std::int64_t first, std::int64_t end, std::size_t limit) const {
    std::vector<std::size_t> out;
    // Extents do not overlap, so ends ascend with starts: the first candidate is the first
    // extent ending after `first`.
    auto it = std::partition_point(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.end <= first; });
    for (; it != entries_.end() && it->lcn < end && out.size() < limit; ++it)
        if (std::find(out.begin(), out.end(), it->stream) == out.end()) out.push_back(it->stream);
    return out;
}

}  // namespace guestfrag::gui
