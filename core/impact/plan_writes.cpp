// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/impact/plan_writes.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/estimate/stream_ios.hpp"

namespace guestfrag {

void for_each_plan_io(const VolumeMap& volume, const Plan& plan, std::uint64_t max_io,
                      const std::function<void(const Io&)>& visit) {
    check_max_io(max_io);
    const std::uint64_t cs = volume.cluster_size;
    if (cs == 0 || cs % kSectorBytes != 0)
        throw Error(ErrorKind::Unsupported,
                    "cluster size " + std::to_string(cs) + " is not a multiple of 512");
    const auto total = static_cast<std::uint64_t>(std::max<std::int64_t>(volume.total_clusters, 0));
    for (std::size_t i = 0; i < plan.moves.size(); ++i) {
        const Move& m = plan.moves[i];
        // apply_plan refuses such moves first; checked here too so that no offset overflows.
        if (m.from_lcn < 0 || m.to_lcn < 0 || m.clusters < 0 ||
            static_cast<std::uint64_t>(m.from_lcn) > total ||
            static_cast<std::uint64_t>(m.clusters) > total - static_cast<std::uint64_t>(m.from_lcn) ||
            static_cast<std::uint64_t>(m.to_lcn) > total ||
            static_cast<std::uint64_t>(m.clusters) > total - static_cast<std::uint64_t>(m.to_lcn))
            throw Error(ErrorKind::Corrupt, "move " + std::to_string(i) + ": outside the volume");
        const std::uint64_t from = volume.partition_offset + static_cast<std::uint64_t>(m.from_lcn) * cs;
        const std::uint64_t to = volume.partition_offset + static_cast<std::uint64_t>(m.to_lcn) * cs;
        const std::uint64_t bytes = static_cast<std::uint64_t>(m.clusters) * cs;
        // As the mover copies: one block read, then the same block written, then the next.
        for (std::uint64_t done = 0; done < bytes;) {
            const std::uint64_t n = std::min(max_io, bytes - done);
            visit(Io{static_cast<std::int64_t>((from + done) / kSectorBytes), n, false});
            visit(Io{static_cast<std::int64_t>((to + done) / kSectorBytes), n, true});
            done += n;
        }
    }
}

PlanWrites assess_plan_writes(const VolumeMap& volume, const Plan& plan, const WrittenMap& written,
                              const LayerProvisioning& provisioning, const DeviceModels& models,
                              std::uint64_t max_io) {
    PlanWrites out;
    out.max_io = max_io;
    out.provisioning = provisioning;
    // One pass, each IO as it is made (a million moves are 48 MB of IOs): summarised as
    // summarize_ios would, and each write asked first how much of it lands in blocks
    // already written.
    IoSummary summary(models, &written);
    WrittenMap map = written;
    for_each_plan_io(volume, plan, max_io, [&](const Io& io) {
        summary.add(io);
        if (!io.write) return;
        const std::uint64_t already = map.bytes_in_written(io);
        out.into_written_bytes += already;
        out.into_new_bytes += io.length - already;
        (void)map.replay(io);
    });
    out.stats = summary.stats();
    return out;
}

WrittenMap written_after_plan(const WrittenMap& written, const VolumeMap& volume, const Plan& plan) {
    WrittenMap map = written;
    // The block size does not matter for which blocks get written, only the bytes written.
    for_each_plan_io(volume, plan, kDefaultMaxIo, [&](const Io& io) { (void)map.replay(io); });
    return map;
}

}  // namespace guestfrag
