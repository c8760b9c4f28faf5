// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/io_stats.hpp"

#include <limits>
#include <optional>

namespace guestfrag {

IoStats summarize_ios(std::span<const Io> ios, const DeviceModels& models) {
    IoStats s;
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
        s.device_seconds.hdd += models.hdd.io_seconds(io, distance);
        s.device_seconds.ssd += models.ssd.io_seconds(io, distance);
        s.device_seconds.array += models.array.io_seconds(io, distance);
        previous = &io;
    }
    if (s.ios != 0) s.mean_io_bytes = static_cast<double>(s.bytes) / static_cast<double>(s.ios);
    if (s.ios > 1)
        s.sequential_percent = 100.0 * static_cast<double>(s.sequential) / static_cast<double>(s.ios - 1);
    return s;
}

}  // namespace guestfrag
