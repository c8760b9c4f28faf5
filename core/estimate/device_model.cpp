// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/device_model.hpp"

#include <algorithm>
#include <cmath>

namespace guestfrag {

namespace {

double transfer_seconds(const Io& io, double bytes_per_second) {
    return static_cast<double>(io.length) / bytes_per_second;
}

/// The calibration of docs/estimate.md §8.3: a full format writes the whole 40 GiB disk
/// sequentially in 1 MiB IOs, one per VMFS file block.
constexpr double kFormatIos = 40.0 * 1024;
constexpr double kFormatEagerSeconds = 537;
constexpr double kFormatLazySeconds = 667;
constexpr double kFormatThinSeconds = 784;
constexpr double kMiB = 1 << 20;

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

double FirstWriteCost::block_seconds(Provisioning type, std::uint64_t block_bytes) const noexcept {
    if (type == Provisioning::Eager) return 0;
    const double zero = static_cast<double>(block_bytes) / zero_bytes_per_second;
    return type == Provisioning::Thin ? zero + allocate_seconds : zero;
}

double HddModel::io_seconds(const Io& io, std::optional<std::int64_t> distance) const noexcept {
    const double transfer =
        transfer_seconds(io, io.write ? write_transfer_bytes_per_second : transfer_bytes_per_second);
    if (distance && *distance == 1) return transfer;
    // The first IO moves the heads from LBN 0 (where they rest after power-on).
    const std::int64_t seek = distance ? *distance : io.lbn;
    const double positioning = seek_seconds(seek) + rotational_latency_seconds();
    if (!distance || *distance < 1) return positioning + transfer;
    // A short forward skip: the target is ahead on the track under the head (or the next
    // one, which sequential reading reaches without a seek), so the drive waits for the
    // gap to pass at the media rate instead of seeking and waiting half a turn on average.
    const double gap = static_cast<double>(*distance - 1) * static_cast<double>(kSectorBytes) /
                       (io.write ? write_transfer_bytes_per_second : transfer_bytes_per_second);
    return std::min(gap, positioning) + transfer;
}

double SsdModel::io_seconds(const Io& io, std::optional<std::int64_t>) const noexcept {
    if (io.write) return write_latency_seconds + transfer_seconds(io, write_transfer_bytes_per_second);
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
    if (io.write) return write_io_seconds + transfer_seconds(io, write_transfer_bytes_per_second);
    return (sequential(distance) ? sequential_io_seconds : random_io_seconds) +
           transfer_seconds(io, transfer_bytes_per_second);
}

ArrayModel format_calibrated_array() noexcept {
    ArrayModel array;
    // Eager: every IO is write latency + 1 MiB at the rate R: 537 s / 40960 IOs.
    const double per_io = kFormatEagerSeconds / kFormatIos;
    array.write_transfer_bytes_per_second = kMiB / (per_io - array.write_io_seconds);
    // Lazy adds one 1 MiB block's zeroing per IO, thin also its allocation.
    array.first_write.zero_bytes_per_second =
        kMiB / ((kFormatLazySeconds - kFormatEagerSeconds) / kFormatIos);
    array.first_write.allocate_seconds = (kFormatThinSeconds - kFormatLazySeconds) / kFormatIos;
    return array;
}

std::optional<DeviceModels> device_preset(std::string_view name) {
    if (name == "default") return DeviceModels{};
    if (name == "3par-format") {
        DeviceModels models;
        models.array = format_calibrated_array();
        return models;
    }
    return std::nullopt;
}

}  // namespace guestfrag
