// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/estimate/device_model.hpp"
#include "core/estimate/guest_model.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/estimate/io_trace.hpp"
#include "core/estimate/trace_workload.hpp"
#include "core/estimate/workload.hpp"
#include "core/estimate/write_workload.hpp"
#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// The default cap on one IO (docs/design.md §4: --max-io defaults to 1 MiB).
inline constexpr std::uint64_t kDefaultMaxIo = 1 << 20;

/// How the guest's reads become IOs at the virtual disk: its profile (page cache,
/// read-ahead, $MFT reads; docs/estimate.md §1.1) and the largest IO (--max-io).
struct IoShape {
    std::uint64_t max_io = kDefaultMaxIo;
    GuestProfile guest = default_guest_profile();
};

/// A workload fixed for one volume, ready to replay on any state of it: a trace's paths
/// and a write's file sizes are settled once, from the state before a plan, so that the
/// before and after estimates replay exactly the same workload.
struct PreparedWorkload {
    Workload workload;
    std::uint64_t max_io = kDefaultMaxIo;
    GuestProfile guest = default_guest_profile();  ///< how scans and traces of paths are read
    std::vector<std::string> trace_paths;  ///< Trace of paths: volume paths in order
    /// Trace of block IOs (an nbdkit log, blkparse output, a vscsiStats trace): its IOs,
    /// tied to the files they read in the state before a plan. Shared: it is not changed.
    std::shared_ptr<const IoTraceReplay> io_trace;
    std::vector<std::uint64_t> write_sizes;  ///< Write, Install: sizes of the files to create, in order
    std::uint64_t disk_size = 0;             ///< Fio: the virtual disk's size
};

/// Settles `workload` for `volume` of `image`: reads a block IO trace (read_io_trace) or
/// loads the trace's paths (load_trace),
/// samples the write's or install's file sizes (write_file_sizes; check_install_writes) or
/// checks a fio job's target against the disk or the volume's free space (check_fio_target).
/// Throws Error(Unsupported) for an invalid shape.max_io, and whatever those throw.
[[nodiscard]] PreparedWorkload prepare_workload(const Workload& workload, const IoShape& shape,
                                                const DiskImage& image, const VolumeMap& volume);

/// What a workload's generator saw besides its IOs.
struct WorkloadNotes {
    std::optional<TraceOutcome> trace;  ///< Trace only
    std::optional<WriteOutcome> write;  ///< Write and Install only
};

/// Hands the IO stream of `workload` on `volume` to `each` in issue order (its guest's
/// GuestReader over scan_reads or trace_reads, write_ios, for_each_fio_io or
/// for_each_install_io). fio and install IOs are handed over as they are made, never
/// listed: a job may make 10,000,000 of them.
/// Throws as those do. Cost: O(IOs) plus the generator's indexing.
WorkloadNotes for_each_workload_io(const VolumeMap& volume, const PreparedWorkload& workload,
                                   const std::function<void(const Io&)>& each);

/// One workload's estimate on one volume state: the report's "R" plus the generator's notes.
struct WorkloadEstimate {
    IoStats stats;
    std::optional<TraceOutcome> trace;
    std::optional<WriteOutcome> write;
};

/// for_each_workload_io into an IoSummary (first writes counted on a copy of `written`,
/// when given). The IO list is not kept.
[[nodiscard]] WorkloadEstimate estimate_workload(const VolumeMap& volume, const PreparedWorkload& workload,
                                                 const DeviceModels& models = {},
                                                 const WrittenMap* written = nullptr);

}  // namespace guestfrag
