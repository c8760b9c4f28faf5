// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag::gui {

/// Which streams own which clusters: every allocated extent of a volume sorted by LCN, for
/// the cluster map's tooltip ("files in this cell"). Holds indices into
/// VolumeMap::streams, so it is valid as long as that vector is unchanged.
/// Build O(runs · log runs), query O(log runs + hits).
class ExtentIndex {
public:
    ExtentIndex() = default;
    explicit ExtentIndex(const VolumeMap& volume);

    /// Indices of the streams owning a cluster in [first, end), each once, in LCN order of
    /// their first extent there; at most `limit` of them.
    [[nodiscard]] std::vector<std::size_t> streams_in(std::int64_t first, std::int64_t end, std::size_t limit) const;

private:
    struct Entry {
        std::int64_t lcn = 0;
        std::int64_t end = 0;
        std::size_t stream = 0;
    };
    std::vector<Entry> entries_;  // sorted by lcn; extents of one volume never overlap
};

}  // namespace guestfrag::gui
