// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/io_stats.hpp"

#include <limits>
#include <optional>

namespace guestfrag {

Throughput throughput(std::uint64_t ios, std::uint64_t bytes, double seconds) noexcept {
    Throughput t;
    if (seconds > 0) {
        t.iops = static_cast<double>(ios) / seconds;
        t.mb_per_second = static_cast<double>(bytes) / 1e6 / seconds;
    }
    if (ios != 0) t.mean_latency_seconds = seconds / static_cast<double>(ios);
    return t;
}

IoStats summarize_ios(std::span<const Io> ios, const DeviceModels& models, const WrittenMap* written) {
    IoStats s;
    std::optional<WrittenMap> map;
    if (written != nullptr) {
        map = *written;
        s.zero_block = map->block_bytes();
    }
    const Io* previous = nullptr;
    for (const Io& io : ios) {
        std::optional<std::int64_t> distance;
        if (previous != nullptr) {
            distance = seek_distance(*previous, io);
            s.seek_distance.add(*distance);
            if (*distance == 1) ++s.sequential;
        }
        // Lengths beyond INT64_MAX do not occur (IOs are capped by --max-io); saturate anyway.
        constexpr auto kMaxLength = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        s.io_length.add(static_cast<std::int64_t>(io.length > kMaxLength ? kMaxLength : io.length));
        ++s.ios;
        s.bytes += io.length;
        if (io.write) {
            ++s.writes;
            s.written_bytes += io.length;
            if (map) s.first_writes += map->replay(io);
        }
        s.device_seconds.hdd += models.hdd.io_seconds(io, distance);
        s.device_seconds.ssd += models.ssd.io_seconds(io, distance);
        s.device_seconds.array += models.array.io_seconds(io, distance);
        previous = &io;
    }
    constexpr std::array kTypes{Provisioning::Eager, Provisioning::Lazy, Provisioning::Thin};
    for (std::size_t i = 0; i < kTypes.size(); ++i) {
        ProvisionedSeconds& p = s.provisioned[i];
        p.type = kTypes[i];
        p.first_writes = p.type == Provisioning::Eager ? 0 : s.first_writes;
        const double blocks = static_cast<double>(p.first_writes);
        p.device_seconds = {
            s.device_seconds.hdd + blocks * models.hdd.first_write.block_seconds(p.type, s.zero_block),
            s.device_seconds.ssd + blocks * models.ssd.first_write.block_seconds(p.type, s.zero_block),
            s.device_seconds.array + blocks * models.array.first_write.block_seconds(p.type, s.zero_block)};
    }
    if (s.ios != 0) s.mean_io_bytes = static_cast<double>(s.bytes) / static_cast<double>(s.ios);
    if (s.ios > 1)
        s.sequential_percent = 100.0 * static_cast<double>(s.sequential) / static_cast<double>(s.ios - 1);
    return s;
}

}  // namespace guestfrag
