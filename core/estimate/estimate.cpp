// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/estimate.hpp"

#include "core/estimate/guest_model.hpp"
#include "core/estimate/install_workload.hpp"
#include "core/estimate/scan_workload.hpp"
#include "core/estimate/stream_ios.hpp"
#include "core/estimate/trace_source.hpp"

namespace guestfrag {

PreparedWorkload prepare_workload(const Workload& workload, const IoShape& shape, const DiskImage& image,
                                  const VolumeMap& volume) {
    check_max_io(shape.max_io);
    PreparedWorkload prepared;
    prepared.workload = workload;
    prepared.max_io = shape.max_io;
    prepared.guest = shape.guest;
    switch (workload.kind) {
        case Workload::Kind::Scan:
            break;
        case Workload::Kind::Trace: {
            TraceSource read = read_trace_source(workload.trace_source, image, volume);
            prepared.io_trace = std::move(read.io_trace);
            prepared.trace_paths = std::move(read.paths);
            break;
        }
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

namespace {

/// A file a scan or a trace hands over: `stream` read, or, nullptr, the file opened.
void read_or_open(GuestReader& guest, std::uint64_t record, const Stream* stream) {
    if (stream)
        guest.read(*stream);
    else
        guest.open(record);
}

}  // namespace

WorkloadNotes for_each_workload_io(const VolumeMap& volume, const PreparedWorkload& workload,
                                   const std::function<void(const Io&)>& each) {
    WorkloadNotes notes;
    switch (workload.workload.kind) {
        case Workload::Kind::Scan: {
            GuestReader guest(volume, workload.guest, workload.max_io, each);
            scan_reads(volume, workload.workload.scan_order,
                       [&guest](std::uint64_t record, const Stream* s) { read_or_open(guest, record, s); });
            break;
        }
        case Workload::Kind::Trace: {
            if (workload.io_trace) {
                workload.io_trace->replay(volume, each);
                break;
            }
            GuestReader guest(volume, workload.guest, workload.max_io, each);
            notes.trace = trace_reads(
                volume, workload.trace_paths,
                [&guest](std::uint64_t record, const Stream* s) { read_or_open(guest, record, s); });
            break;
        }
        case Workload::Kind::Write: {
            const WriteIos write = write_ios(volume, workload.write_sizes, workload.max_io);
            for (const Io& io : write.ios) each(io);
            notes.write = write.outcome;
            break;
        }
        case Workload::Kind::Fio:
            for_each_fio_io(workload.workload.fio, workload.disk_size, volume, each);
            break;
        case Workload::Kind::Install:
            notes.write =
                for_each_install_io(volume, workload.write_sizes, workload.workload.install, workload.max_io, each);
            break;
    }
    return notes;
}

WorkloadEstimate estimate_workload(const VolumeMap& volume, const PreparedWorkload& workload,
                                   const DeviceModels& models, const WrittenMap* written) {
    IoSummary summary(models, written);
    WorkloadNotes notes = for_each_workload_io(volume, workload, [&summary](const Io& io) { summary.add(io); });
    return {summary.stats(), std::move(notes.trace), notes.write};
}

}  // namespace guestfrag
