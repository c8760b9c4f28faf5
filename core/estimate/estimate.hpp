// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/estimate/device_model.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/estimate/trace_workload.hpp"
#include "core/estimate/workload.hpp"
#include "core/estimate/write_workload.hpp"
#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// The default cap on one IO (docs/design.md §4: --max-io defaults to 1 MiB).
inline constexpr std::uint64_t kDefaultMaxIo = 1 << 20;

/// A workload fixed for one volume, ready to replay on any state of it: a trace's paths
/// and a write's file sizes are settled once, from the state before a plan, so that the
/// before and after estimates replay exactly the same workload.
struct PreparedWorkload {
    Workload workload;
    std::uint64_t max_io = kDefaultMaxIo;
    std::vector<std::string> trace_paths;    ///< Trace: volume paths in order
    std::vector<std::uint64_t> write_sizes;  ///< Write, Install: sizes of the files to create, in order
    std::uint64_t disk_size = 0;             ///< Fio: the virtual disk's size
};

/// Settles `workload` for `volume` of `image`: loads the trace's paths (load_trace),
/// samples the write's or install's file sizes (write_file_sizes; check_install_writes) or
/// checks a fio job's target against the disk or the volume's free space (check_fio_target).
/// Throws Error(Unsupported) for an invalid max_io, and whatever those throw.
[[nodiscard]] PreparedWorkload prepare_workload(const Workload& workload, std::uint64_t max_io,
                                                const DiskImage& image, const VolumeMap& volume);

/// The IOs of a prepared workload on one state of the volume, and what the generator saw.
struct WorkloadIos {
    std::vector<Io> ios;
    std::optional<TraceOutcome> trace;  ///< Trace only
    std::optional<WriteOutcome> write;  ///< Write and Install only
};

/// Generates the IO stream of `workload` on `volume` (scan_ios, trace_ios, write_ios,
/// fio_ios or install_ios).
/// Throws as those do. Cost: O(IOs) plus the generator's indexing.
[[nodiscard]] WorkloadIos workload_ios(const VolumeMap& volume, const PreparedWorkload& workload);

/// One workload's estimate on one volume state: the report's "R" plus the generator's notes.
struct WorkloadEstimate {
    IoStats stats;
    std::optional<TraceOutcome> trace;
    std::optional<WriteOutcome> write;
};

/// workload_ios followed by summarize_ios (first writes counted on a copy of `written`,
/// when given). The IO list is not kept.
[[nodiscard]] WorkloadEstimate estimate_workload(const VolumeMap& volume, const PreparedWorkload& workload,
                                                 const DeviceModels& models = {},
                                                 const WrittenMap* written = nullptr);

}  // namespace guestfrag
