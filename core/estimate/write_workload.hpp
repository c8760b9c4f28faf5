// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/estimate/io.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// The sizes of the N files the write:N workload creates (docs/estimate.md §2): the
/// population P is the sizes of the volume's user files (records ≥ 24) — their unnamed
/// $DATA streams with size > 0 that are movable and neither sparse nor compressed — in
/// mft_record order; file i of N (from 0) takes P[⌊i · |P| / N⌋], a fixed fractional
/// stride through P that is deterministic and follows the volume's size distribution.
/// Throws Error(Unsupported) when P is empty. O(streams log streams + N).
[[nodiscard]] std::vector<std::uint64_t> write_file_sizes(const VolumeMap& volume, std::uint64_t files);

/// How the simulated files landed (write:N and install:N).
struct WriteOutcome {
    std::uint64_t files = 0;             ///< files asked for
    /// Files that found space for all their data. The others, files − files_written, did
    /// not fit: write:N skips them whole; install:N stops them at the first chunk that
    /// found no room (the chunks before it were written).
    std::uint64_t files_written = 0;
    std::uint64_t bytes_written = 0;     ///< Σ sizes of the files written
    std::uint64_t fragments = 0;         ///< Σ fragments (runs) of the files written
    std::uint64_t fragmented_files = 0;  ///< files written in more than one run
};

/// The IOs of a write workload and its outcome.
struct WriteIos {
    std::vector<Io> ios;
    WriteOutcome outcome;
};

/// Creates files of `sizes` (in order) on a copy of the volume's free space with the
/// ClusterAllocator and writes each front to back (append_stream_ios: IOs up to
/// `max_io`, never crossing a run, the last ending at the size rounded up to 512 bytes).
/// The MFT zone is avoided while other free space lasts, as NTFS does; the first file
/// looks from the end of the MFT zone (cluster 0 when there is none). A file larger than
/// the free space left is skipped (not written, counted) and the next one tried. Only data
/// IOs are modelled (no MFT record, $Bitmap or log writes). Throws as append_stream_ios.
/// O(free extents + IOs + files · log free extents).
[[nodiscard]] WriteIos write_ios(const VolumeMap& volume, std::span<const std::uint64_t> sizes,
                                 std::uint64_t max_io);

}  // namespace guestfrag
