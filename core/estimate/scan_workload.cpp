// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/scan_workload.hpp"

#include <algorithm>
#include <vector>

#include "core/model/paths.hpp"

namespace guestfrag {

namespace {

[[nodiscard]] bool scanned(const Stream& s, Workload::ScanOrder order) {
    const bool index = order == Workload::ScanOrder::Path &&
                       s.type == static_cast<std::uint32_t>(AttrType::IndexAllocation) && s.name == "$I30";
    return (s.type == static_cast<std::uint32_t>(AttrType::Data) || index) && s.size > 0;
}

}  // namespace

void scan_reads(const VolumeMap& volume, Workload::ScanOrder order,
                const std::function<void(std::uint64_t, const Stream*)>& read) {
    if (order == Workload::ScanOrder::Path) {
        // path_order hands the streams of the walk's records in its order, then those of
        // records it did not reach; a walked record with no stream read is opened alone.
        const std::vector<std::uint64_t> walk = path_walk(volume);
        const std::vector<std::size_t> streams = path_order(volume, walk);
        auto next = streams.begin();
        for (const std::uint64_t record : walk) {
            bool any = false;
            for (; next != streams.end() && volume.streams[*next].mft_record == record; ++next)
                if (const Stream& s = volume.streams[*next]; scanned(s, order)) {
                    read(record, &s);
                    any = true;
                }
            if (!any) read(record, nullptr);
        }
        for (; next != streams.end(); ++next)
            if (const Stream& s = volume.streams[*next]; scanned(s, order)) read(s.mft_record, &s);
        return;
    }
    std::vector<const Stream*> streams;
    for (const Stream& s : volume.streams)
        if (scanned(s, order)) streams.push_back(&s);
    // Every label here is "$DATA" or "$DATA:name", so comparing names orders labels: the
    // unnamed stream ("" name) first, then named streams by name. The map is usually sorted
    // already; sorting anyway keeps the order a contract rather than an accident.
    std::stable_sort(streams.begin(), streams.end(), [](const Stream* a, const Stream* b) {
        if (a->mft_record != b->mft_record) return a->mft_record < b->mft_record;
        return a->name < b->name;
    });
    // The files (sorted by record) and the streams merged in record order.
    auto next = streams.begin();
    const auto streams_before = [&](std::uint64_t record) {
        for (; next != streams.end() && (*next)->mft_record < record; ++next)
            read((*next)->mft_record, *next);
    };
    std::uint64_t last = 0;
    bool first = true;
    for (const FileEntry& f : volume.files) {
        if (!first && f.mft_record == last) continue;  // a second name of the same file
        first = false;
        last = f.mft_record;
        streams_before(f.mft_record);
        if (next == streams.end() || (*next)->mft_record != f.mft_record) read(f.mft_record, nullptr);
        for (; next != streams.end() && (*next)->mft_record == f.mft_record; ++next)
            read(f.mft_record, *next);
    }
    for (; next != streams.end(); ++next) read((*next)->mft_record, *next);
}

}  // namespace guestfrag
