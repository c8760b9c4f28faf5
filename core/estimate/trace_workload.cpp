// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/trace_workload.hpp"

#include <unordered_map>
#include <unordered_set>

namespace guestfrag {

TraceOutcome trace_reads(const VolumeMap& volume, std::span<const std::string> paths,
                         const std::function<void(std::uint64_t, const Stream*)>& read) {
    const std::unordered_map<std::string, std::uint64_t> records = index_paths(volume);

    std::unordered_map<std::uint64_t, const Stream*> data;  // record → its unnamed $DATA
    for (const Stream& s : volume.streams)
        if (s.type == static_cast<std::uint32_t>(AttrType::Data) && s.name.empty())
            data.emplace(s.mft_record, &s);

    TraceOutcome outcome;
    std::unordered_set<std::string> reported;
    for (const std::string& path : paths) {
        ++outcome.paths;
        const auto file = records.find(fold_trace_path(path));
        if (file == records.end()) {
            ++outcome.missing;
            if (reported.insert(path).second) outcome.missing_paths.push_back(path);
            continue;
        }
        const auto stream = data.find(file->second);
        if (stream == data.end()) {
            ++outcome.without_data;
            read(file->second, nullptr);
            continue;
        }
        ++outcome.read;
        read(file->second, stream->second);
    }
    return outcome;
}

}  // namespace guestfrag
