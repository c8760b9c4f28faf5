// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/scan_workload.hpp"

#include <algorithm>

#include "core/model/paths.hpp"

namespace guestfrag {

std::vector<const Stream*> scan_streams(const VolumeMap& volume, Workload::ScanOrder order) {
    std::vector<const Stream*> streams;
    if (order == Workload::ScanOrder::Path) {
        for (const std::size_t i : path_order(volume)) {
            const Stream& s = volume.streams[i];
            const bool data = s.type == static_cast<std::uint32_t>(AttrType::Data);
            const bool index =
                s.type == static_cast<std::uint32_t>(AttrType::IndexAllocation) && s.name == "$I30";
            if ((data || index) && s.size > 0) streams.push_back(&s);
        }
        return streams;
    }
    for (const Stream& s : volume.streams)
        if (s.type == static_cast<std::uint32_t>(AttrType::Data) && s.size > 0) streams.push_back(&s);
    // Every label here is "$DATA" or "$DATA:name", so comparing names orders labels: the
    // unnamed stream ("" name) first, then named streams by name. The map is usually sorted
    // already; sorting anyway keeps the order a contract rather than an accident.
    std::stable_sort(streams.begin(), streams.end(), [](const Stream* a, const Stream* b) {
        if (a->mft_record != b->mft_record) return a->mft_record < b->mft_record;
        return a->name < b->name;
    });
    return streams;
}

}  // namespace guestfrag
