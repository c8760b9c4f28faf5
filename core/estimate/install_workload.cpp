// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/install_workload.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/new_file_placer.hpp"
#include "core/estimate/stream_ios.hpp"
#include "core/estimate/workload_options.hpp"

namespace guestfrag {

namespace {

constexpr std::string_view kInstall = "install";

/// One writer and the file it is appending to.
struct Writer {
    bool busy = false;
    std::uint64_t size = 0;      ///< the file's final size
    std::uint64_t done = 0;      ///< bytes written so far
    std::int64_t clusters = 0;   ///< clusters allocated so far
    std::vector<Extent> runs;    ///< the file's runs, VCNs from 0, merged where they continue on disk
    std::size_t cursor = 0;      ///< the run holding byte `done` (writes only move forward)
};

}  // namespace

InstallJob parse_install_job(std::string_view options) {
    InstallJob job;
    for_each_workload_option(kInstall, options, [&](std::string_view key, std::string_view value) {
        if (key == "writers") {
            const std::uint64_t writers = parse_option_number(kInstall, key, value);
            if (writers == 0 || writers > InstallJob::kMaxWriters)
                bad_workload_option(kInstall, key, "must be 1 to " + std::to_string(InstallJob::kMaxWriters));
            job.writers = static_cast<unsigned>(writers);
        } else if (key == "chunk") {
            job.chunk = parse_option_size(kInstall, key, value);
            if (job.chunk == 0 || job.chunk % kSectorBytes != 0)
                bad_workload_option(kInstall, key, "must be a positive multiple of 512");
        } else {
            bad_workload_option(kInstall, key, "unknown (writers, chunk)");
        }
    });
    return job;
}

std::uint64_t install_writes(const InstallJob& job, std::span<const std::uint64_t> sizes) {
    std::uint64_t writes = 0;
    for (const std::uint64_t size : sizes) {
        // Saturates: sizes from a corrupt map must not wrap the sum below the limit.
        const std::uint64_t add = size / job.chunk + (size % job.chunk != 0 ? 1 : 0);
        writes = add > UINT64_MAX - writes ? UINT64_MAX : writes + add;
    }
    return writes;
}

void check_install_writes(const InstallJob& job, std::span<const std::uint64_t> sizes) {
    const std::uint64_t writes = install_writes(job, sizes);
    if (writes > InstallJob::kMaxWrites)
        bad_workload_option(kInstall, "chunk",
                            std::to_string(sizes.size()) + " files of the volume's sizes take " + std::to_string(writes) +
                                " writes of " + std::to_string(job.chunk) + " bytes, more than " +
                                std::to_string(InstallJob::kMaxWrites) + " (raise chunk or lower N)");
}

WriteIos install_ios(const VolumeMap& volume, std::span<const std::uint64_t> sizes, const InstallJob& job,
                     std::uint64_t max_io) {
    check_install_writes(job, sizes);
    WriteIos result;
    result.ios.reserve(install_writes(job, sizes));
    result.outcome = for_each_install_io(volume, sizes, job, max_io,
                                         [&result](const Io& io) { result.ios.push_back(io); });
    return result;
}

WriteOutcome for_each_install_io(const VolumeMap& volume, std::span<const std::uint64_t> sizes,
                                 const InstallJob& job, std::uint64_t max_io,
                                 const std::function<void(const Io&)>& each) {
    check_max_io(max_io);
    if (volume.cluster_size == 0 || volume.cluster_size % kSectorBytes != 0)
        throw Error(ErrorKind::Unsupported, "cluster size " + std::to_string(volume.cluster_size));
    if (job.writers == 0 || job.chunk == 0 || job.chunk % kSectorBytes != 0)
        throw Error(ErrorKind::Internal, "install_ios: job not from parse_install_job");
    check_install_writes(job, sizes);
    const std::uint64_t cs = volume.cluster_size;

    WriteOutcome outcome;
    outcome.files = sizes.size();

    NewFilePlacer placer(volume);
    std::vector<Writer> writers(job.writers);
    std::size_t queued = 0;  // the next file in the queue

    const auto finish = [&](Writer& w) {
        w.busy = false;
        ++outcome.files_written;
        outcome.bytes_written += w.size;
        outcome.fragments += w.runs.size();
        if (w.runs.size() > 1) ++outcome.fragmented_files;
    };
    // Gives an idle writer the next file; empty files are created and done at once.
    const auto take_file = [&](Writer& w) {
        while (!w.busy && queued < sizes.size()) {
            w.busy = true;
            w.size = sizes[queued++];
            w.done = 0;
            w.clusters = 0;
            w.runs.clear();
            w.cursor = 0;
            if (w.size == 0) finish(w);
        }
    };
    // Appends one chunk: allocates the clusters it lacks, then writes it run by run.
    const auto write_chunk = [&](Writer& w) {
        const std::uint64_t length = std::min(job.chunk, w.size - w.done);
        const std::uint64_t end = w.done + length;
        const auto needed = static_cast<std::int64_t>((end + cs - 1) / cs) - w.clusters;
        if (needed > 0) {
            const std::int64_t hint = w.runs.empty() ? placer.hint() : w.runs.back().lcn + w.runs.back().clusters;
            std::vector<Extent> got = placer.place(needed, hint);
            if (got.empty()) {  // no room: the file stops here
                w.busy = false;
                return;
            }
            for (Extent e : got) {
                e.vcn += w.clusters;
                if (!w.runs.empty() && w.runs.back().lcn + w.runs.back().clusters == e.lcn)
                    w.runs.back().clusters += e.clusters;
                else
                    w.runs.push_back(e);
            }
            w.clusters += needed;
        }
        // The bytes [done, end) rounded up to whole sectors, as the guest writes them.
        std::uint64_t pos = w.done;
        std::uint64_t left = (length + kSectorBytes - 1) / kSectorBytes * kSectorBytes;
        const auto run_end = [&](std::size_t r) {
            return static_cast<std::uint64_t>(w.runs[r].vcn + w.runs[r].clusters) * cs;
        };
        while (left > 0) {
            while (run_end(w.cursor) <= pos) ++w.cursor;
            const Extent& run = w.runs[w.cursor];
            const std::uint64_t piece = std::min({left, run_end(w.cursor) - pos, max_io});
            const std::uint64_t disk = volume.partition_offset + static_cast<std::uint64_t>(run.lcn) * cs +
                                       (pos - static_cast<std::uint64_t>(run.vcn) * cs);
            each(Io{static_cast<std::int64_t>(disk / kSectorBytes), piece, true});
            pos += piece;
            left -= piece;
        }
        w.done = end;
        if (w.done == w.size) finish(w);
    };

    // Round-robin turns until every writer is idle and the queue is empty.
    for (bool any = true; any;) {
        any = false;
        for (Writer& w : writers) {
            take_file(w);
            if (!w.busy) continue;
            any = true;
            write_chunk(w);
        }
    }
    return outcome;
}

}  // namespace guestfrag
