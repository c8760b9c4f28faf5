// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// File fragmentation of a volume (DESIGN §3; formulas in docs/metrics.md).
/// Pure function of the VolumeMap; O(streams · extents).
struct FileFragmentation {
    std::uint64_t files = 0;               ///< base records in use (files and directories)
    std::uint64_t fragmented_files = 0;    ///< files with at least one fragmented stream
    std::uint64_t streams = 0;             ///< non-resident streams with ≥ 1 fragment
    std::uint64_t fragmented_streams = 0;  ///< streams with > 1 fragment
    std::uint64_t fragments = 0;           ///< Σ fragments over all streams
    std::uint64_t excess_fragments = 0;    ///< Σ (fragments − 1)
    std::uint64_t fragmented_bytes = 0;    ///< Σ allocated bytes of fragmented streams
    double fragmentation_percent = 0;      ///< UltraDefrag: 100 · bad / total
    double average_fragments_per_file = 0; ///< Windows: Σ fragments / files with ≥ 1 stream
    std::uint64_t mft_fragments = 0;       ///< fragments of $MFT's unnamed $DATA
    std::uint64_t pagefile_fragments = 0;  ///< fragments of \pagefile.sys's $DATA (0 if none)
};

[[nodiscard]] FileFragmentation analyze_file_fragmentation(const VolumeMap& volume);

/// The `n` most fragmented streams, most fragments first (ties: larger size, then record).
[[nodiscard]] std::vector<const Stream*> most_fragmented_streams(const VolumeMap& volume, std::size_t n);

}  // namespace guestfrag
