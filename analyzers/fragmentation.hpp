// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// File fragmentation of a volume (docs/design.md §3; formulas and worked example in docs/metrics.md).
/// A stream counts when it has ≥ 1 fragment (resident streams are absent from the VolumeMap;
/// all-hole streams have 0 fragments and are skipped everywhere). Counts of bytes saturate at
/// UINT64_MAX instead of wrapping.
struct FileFragmentation {
    std::uint64_t files = 0;                ///< base records in use (files and directories)
    std::uint64_t fragmented_files = 0;     ///< files with at least one fragmented stream
    std::uint64_t streams = 0;              ///< non-resident streams with ≥ 1 fragment
    std::uint64_t fragmented_streams = 0;   ///< streams with > 1 fragment
    std::uint64_t fragments = 0;            ///< Σ fragments over all streams
    std::uint64_t excess_fragments = 0;     ///< Σ (fragments − 1)
    std::uint64_t fragmented_bytes = 0;     ///< Σ allocated bytes of fragmented streams
    double fragmentation_percent = 0;       ///< UltraDefrag: 100 · bad / total (0 if total = 0)
    std::uint64_t files_with_streams = 0;   ///< distinct records owning a stream with ≥ 1 fragment
    double average_fragments_per_file = 0;  ///< Windows: fragments / files_with_streams (0 if none)
    std::uint64_t mft_fragments = 0;        ///< fragments of $MFT's unnamed $DATA
    std::uint64_t pagefile_fragments = 0;   ///< fragments of \pagefile.sys's $DATA (0 if none)
};

/// Computes every figure above in one pass over the streams (plus one pass over the files to
/// find \pagefile.sys). Pure; never fails; O(streams · extents + files · log files).
[[nodiscard]] FileFragmentation analyze_file_fragmentation(const VolumeMap& volume);

/// The `n` most fragmented streams (fragments > 1 only, so the result may be shorter than `n`):
/// most fragments first, ties by larger size, then lower mft_record, then label.
/// The pointers point into `volume.streams` and live as long as it does unchanged.
/// O(streams · extents + streams · log n) time, O(n) extra memory.
[[nodiscard]] std::vector<const Stream*> most_fragmented_streams(const VolumeMap& volume, std::size_t n);

}  // namespace guestfrag
