// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/io_stats.hpp"

#include <array>
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

IoSummary::IoSummary(const DeviceModels& models, const WrittenMap* written) : models_(models) {
    if (written != nullptr) {
        map_ = *written;
        s_.zero_block = map_->block_bytes();
    }
}

void IoSummary::add(const Io& io) {
    std::optional<std::int64_t> distance;
    if (previous_) {
        distance = seek_distance(*previous_, io);
        s_.seek_distance.add(*distance);
        if (*distance == 1) ++s_.sequential;
        if (*distance >= 1 && *distance <= kNearSequentialSectors) ++s_.near_sequential;
    }
    // Lengths beyond INT64_MAX do not occur (IOs are capped by --max-io); saturate anyway.
    constexpr auto kMaxLength = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    s_.io_length.add(static_cast<std::int64_t>(io.length > kMaxLength ? kMaxLength : io.length));
    ++s_.ios;
    s_.bytes += io.length;
    if (io.write) {
        ++s_.writes;
        s_.written_bytes += io.length;
        if (map_) s_.first_writes += map_->replay(io);
    }
    s_.device_seconds.hdd += models_.hdd.io_seconds(io, distance);
    s_.device_seconds.ssd += models_.ssd.io_seconds(io, distance);
    s_.device_seconds.array += models_.array.io_seconds(io, distance);
    previous_ = io;
}

IoStats IoSummary::stats() const {
    IoStats s = s_;
    constexpr std::array kTypes{Provisioning::Eager, Provisioning::Lazy, Provisioning::Thin};
    for (std::size_t i = 0; i < kTypes.size(); ++i) {
        ProvisionedSeconds& p = s.provisioned[i];
        p.type = kTypes[i];
        p.first_writes = p.type == Provisioning::Eager ? 0 : s.first_writes;
        const double blocks = static_cast<double>(p.first_writes);
        p.device_seconds = {
            s.device_seconds.hdd + blocks * models_.hdd.first_write.block_seconds(p.type, s.zero_block),
            s.device_seconds.ssd + blocks * models_.ssd.first_write.block_seconds(p.type, s.zero_block),
            s.device_seconds.array + blocks * models_.array.first_write.block_seconds(p.type, s.zero_block)};
    }
    if (s.ios != 0) s.mean_io_bytes = static_cast<double>(s.bytes) / static_cast<double>(s.ios);
    if (s.ios > 1) {
        const auto share = [&](std::uint64_t n) {
            return 100.0 * static_cast<double>(n) / static_cast<double>(s.ios - 1);
        };
        s.sequential_percent = share(s.sequential);
        s.near_sequential_percent = share(s.near_sequential);
    }
    return s;
}

IoStats summarize_ios(std::span<const Io> ios, const DeviceModels& models, const WrittenMap* written) {
    IoSummary summary(models, written);
    for (const Io& io : ios) summary.add(io);
    return summary.stats();
}

}  // namespace guestfrag
