// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/estimate/io.hpp"
#include "core/model/paths.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// How the paths of a trace matched the volume.
struct TraceOutcome {
    std::uint64_t paths = 0;         ///< paths in the trace, repeats included
    std::uint64_t read = 0;          ///< paths whose unnamed $DATA was read (possibly 0 IOs: empty file)
    std::uint64_t without_data = 0;  ///< found, but a directory or a file with resident or no $DATA
    std::uint64_t missing = 0;       ///< paths naming no file of the volume, repeats included
    std::vector<std::string> missing_paths;  ///< each missing path once, as given, in trace order
};

/// Hands `read`, for each path in order, the base record of the file it names and that
/// file's unnamed $DATA, or nullptr when the file has none outside its record (resident or
/// empty data, a directory): a reader that opens it still reads that record. A file is
/// handed over as often as its path is named; returns how the paths matched. Paths are
/// matched case-insensitively (fold_trace_path) against VolumeMap::path_of; unknown paths
/// are counted, not fatal. O(files · path depth · log files) to index the volume, then
/// O(paths).
[[nodiscard]] TraceOutcome trace_reads(const VolumeMap& volume, std::span<const std::string> paths,
                                       const std::function<void(std::uint64_t, const Stream*)>& read);

}  // namespace guestfrag
