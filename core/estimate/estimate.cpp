// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/estimate.hpp"

#include "core/estimate/install_workload.hpp"
#include "core/estimate/scan_workload.hpp"
#include "core/estimate/stream_ios.hpp"
#include "core/estimate/trace_source.hpp"

namespace guestfrag {

PreparedWorkload prepare_workload(const Workload& workload, std::uint64_t max_io, const DiskImage& image,
                                  const VolumeMap& volume) {
    check_max_io(max_io);
    PreparedWorkload prepared;
    prepared.workload = workload;
    prepared.max_io = max_io;
    switch (workload.kind) {
        case Workload::Kind::Scan:
            break;
        case Workload::Kind::Trace:
            prepared.trace_paths = load_trace(workload.trace_source, image, volume);
            break;
        case Workload::Kind::Write:
            prepared.write_sizes = write_file_sizes(volume, workload.files);
            break;
        case Workload::Kind::Install:
            prepared.write_sizes = write_file_sizes(volume, workload.files);
            check_install_writes(workload.install, prepared.write_sizes);
            break;
        case Workload::Kind::Fio:
            prepared.disk_size = image.size();
            (void)check_fio_target(workload.fio, fio_target_bytes(workload.fio, image.size(), volume));
            break;
    }
    return prepared;
}

WorkloadIos workload_ios(const VolumeMap& volume, const PreparedWorkload& workload) {
    WorkloadIos out;
    switch (workload.workload.kind) {
        case Workload::Kind::Scan:
            out.ios = scan_ios(volume, workload.workload.scan_order, workload.max_io);
            break;
        case Workload::Kind::Trace: {
            TraceIos trace = trace_ios(volume, workload.trace_paths, workload.max_io);
            out.ios = std::move(trace.ios);
            out.trace = std::move(trace.outcome);
            break;
        }
        case Workload::Kind::Write: {
            WriteIos write = write_ios(volume, workload.write_sizes, workload.max_io);
            out.ios = std::move(write.ios);
            out.write = write.outcome;
            break;
        }
        case Workload::Kind::Fio:
            out.ios = fio_ios(workload.workload.fio, workload.disk_size, volume);
            break;
        case Workload::Kind::Install: {
            WriteIos write = install_ios(volume, workload.write_sizes, workload.workload.install, workload.max_io);
            out.ios = std::move(write.ios);
            out.write = write.outcome;
            break;
        }
    }
    return out;
}

WorkloadEstimate estimate_workload(const VolumeMap& volume, const PreparedWorkload& workload,
                                   const DeviceModels& models, const WrittenMap* written) {
    WorkloadEstimate estimate;
    IoSummary summary(models, written);
    const auto add = [&summary](const Io& io) { summary.add(io); };
    // fio and install are summarised as their IOs are made: a job may make 10 million.
    if (workload.workload.kind == Workload::Kind::Fio) {
        for_each_fio_io(workload.workload.fio, workload.disk_size, volume, add);
    } else if (workload.workload.kind == Workload::Kind::Install) {
        estimate.write = for_each_install_io(volume, workload.write_sizes, workload.workload.install,
                                             workload.max_io, add);
    } else {
        WorkloadIos ios = workload_ios(volume, workload);
        for (const Io& io : ios.ios) add(io);
        estimate.trace = std::move(ios.trace);
        estimate.write = ios.write;
    }
    estimate.stats = summary.stats();
    return estimate;
}

}  // namespace guestfrag
