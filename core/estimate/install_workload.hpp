// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "core/estimate/write_workload.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// How the install:N workload writes its files (docs/estimate.md §2, `install:N`): several
/// writers at once, each appending its file in chunks, as installers, databases and log
/// writers do.
struct InstallJob {
    static constexpr unsigned kMaxWriters = 64;
    /// Most writes one job may make (each is at least one 24-byte Io in memory).
    static constexpr std::uint64_t kMaxWrites = 10'000'000;

    unsigned writers = 4;                 ///< files written at once, 1 … kMaxWriters
    std::uint64_t chunk = 64 << 10;       ///< bytes one write appends, a positive multiple of 512
};

/// Parses the options after "install:N," (comma-separated key=value: writers, chunk; chunk
/// a size as fio writes it, 64k). Throws Error(Unsupported, "install option 'KEY': ...")
/// naming the option for an unknown one, a malformed value, writers outside 1 … 64, or a
/// chunk that is 0 or not a multiple of 512. An empty list gives the defaults.
[[nodiscard]] InstallJob parse_install_job(std::string_view options);

/// The writes the job makes for files of `sizes`: Σ ⌈size / chunk⌉, saturating at 2^64 − 1.
[[nodiscard]] std::uint64_t install_writes(const InstallJob& job, std::span<const std::uint64_t> sizes);

/// Throws Error(Unsupported, "install option 'chunk': ...") when the files of `sizes` would
/// take more than InstallJob::kMaxWrites writes: the IO list would outgrow the model.
void check_install_writes(const InstallJob& job, std::span<const std::uint64_t> sizes);

/// Writes files of `sizes` (queued in order) with `job.writers` writers on a copy of the
/// volume's free space. Writer w takes the next file from the queue when it has none; the
/// writers take turns, one chunk each (writer 0, writer 1, …). Each write appends
/// min(chunk, bytes left) bytes and allocates only the clusters the file lacks for them
/// (NewFilePlacer with a hint: the cluster after the file's last run; a file's first chunk
/// looks from the end of the last allocation, the MFT zone's end at first). The write is one
/// IO per run it lands in, cut at `max_io`, ending at its end rounded up to 512 bytes.
/// A file whose chunk finds no room is stopped there (its earlier writes stay in the
/// stream; it is not counted in files_written). The outcome's fragments and
/// fragmented_files count the files written in full. Only data IOs are modelled.
/// Throws as append_stream_ios for a bad `max_io` or cluster size, and as check_install_writes.
/// O(free extents + IOs + writes · log free extents).
[[nodiscard]] WriteIos install_ios(const VolumeMap& volume, std::span<const std::uint64_t> sizes,
                                   const InstallJob& job, std::uint64_t max_io);

/// install_ios's IOs handed to `each` in issue order as they are made, none held (a job may
/// make kMaxWrites writes); returns the outcome. Memory: the free extents and one file's
/// runs per writer.
WriteOutcome for_each_install_io(const VolumeMap& volume, std::span<const std::uint64_t> sizes,
                                 const InstallJob& job, std::uint64_t max_io,
                                 const std::function<void(const Io&)>& each);

}  // namespace guestfrag
