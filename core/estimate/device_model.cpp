// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/device_model.hpp"

#include <algorithm>
#include <cmath>

namespace guestfrag {

namespace {

double transfer_seconds(const Io& io, double bytes_per_second) {
    return static_cast<double>(io.length) / bytes_per_second;
}

/// |value| without overflow for INT64_MIN, as a double.
double magnitude(std::int64_t value) {
    return value < 0 ? -static_cast<double>(value) : static_cast<double>(value);
}

}  // namespace

double HddModel::seek_seconds(std::int64_t sectors) const noexcept {
    const double fraction =
        std::min(1.0, magnitude(sectors) * static_cast<double>(kSectorBytes) / stroke_bytes);
    return settle_seconds + (full_stroke_seconds - settle_seconds) * std::sqrt(fraction);
}

double HddModel::io_seconds(const Io& io, std::optional<std::int64_t> distance) const noexcept {
    const double transfer = transfer_seconds(io, transfer_bytes_per_second);
    if (distance && *distance == 1) return transfer;
    // The first IO moves the heads from LBN 0 (where they rest after power-on).
    const std::int64_t seek = distance ? *distance : io.lbn;
    return seek_seconds(seek) + rotational_latency_seconds() + transfer;
}

double SsdModel::io_seconds(const Io& io, std::optional<std::int64_t>) const noexcept {
    return io_latency_seconds + transfer_seconds(io, transfer_bytes_per_second);
}

bool ArrayModel::sequential(std::optional<std::int64_t> distance) const noexcept {
    if (!distance || *distance < 1) return false;
    // distance − 1 is the gap in sectors between the previous IO's end and this IO.
    // Compared in sectors so that huge distances cannot overflow.
    const std::uint64_t window_sectors = (sequential_window_bytes + kSectorBytes - 1) / kSectorBytes;
    return static_cast<std::uint64_t>(*distance - 1) < window_sectors;
}

double ArrayModel::io_seconds(const Io& io, std::optional<std::int64_t> distance) const noexcept {
    return (sequential(distance) ? sequential_io_seconds : random_io_seconds) +
           transfer_seconds(io, transfer_bytes_per_second);
}

}  // namespace guestfrag
