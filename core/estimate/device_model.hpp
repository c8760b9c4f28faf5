// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/estimate/io.hpp"
#include "core/image/provisioning.hpp"

namespace guestfrag {

// Device time models for `guestfrag estimate` (docs/design.md §4). All of them serve one IO at a
// time (queue depth 1) and know nothing of caches beyond what is stated; the parameters,
// their sources and what the models leave out are in docs/estimate.md. `distance` is the
// vscsiStats seek distance from the previous IO (seek_distance), absent for the first IO
// of a workload. Writes go through the same mechanics with the write parameters; what a
// write costs when it is the first one to a zeroing block is the model's FirstWriteCost.

/// The storage's extra work when a write touches a zeroing block never written before
/// (docs/estimate.md §8): lazy-zeroed thick zeroes the block, thin also allocates it,
/// eager-zeroed thick did both at creation and pays nothing.
struct FirstWriteCost {
    double zero_bytes_per_second = 330.4e6;  ///< rate at which the storage writes a block's zeros
    double allocate_seconds = 2.856e-3;      ///< thin only: allocating one block (metadata, locks)

    /// Seconds one first write of a `block_bytes` block costs on `type`.
    [[nodiscard]] double block_seconds(Provisioning type, std::uint64_t block_bytes) const noexcept;
};

/// A 7200 rpm hard disk: a non-sequential IO pays a seek and, on average, half a
/// revolution, or for a forward skip the time the skipped sectors take to pass under the
/// head when that is less; every IO pays its transfer at the media rate. The heads start
/// at LBN 0, so the first IO seeks |lbn| sectors.
struct HddModel {
    double rpm = 7200;
    double settle_seconds = 0.5e-3;      ///< seek of 0 sectors (head settle, track-to-track)
    double full_stroke_seconds = 15e-3;  ///< seek across `stroke_bytes` or more
    double stroke_bytes = 1e12;          ///< the platter surface the disk's LBNs span (1 TB)
    double transfer_bytes_per_second = 150e6;
    double write_transfer_bytes_per_second = 150e6;  ///< writes: the same media rate
    /// Zeroing at the media rate; allocating costs one random metadata write (mean seek
    /// 8.23 ms + half a revolution 4.17 ms + settle ≈ 12.9 ms).
    FirstWriteCost first_write{150e6, 12.9e-3};

    /// Average rotational latency: half a revolution, 30 / rpm seconds (4.17 ms at 7200 rpm).
    [[nodiscard]] double rotational_latency_seconds() const noexcept { return 30.0 / rpm; }
    /// settle + (full_stroke − settle) · √min(1, |sectors| · 512 / stroke_bytes): the
    /// square-root seek curve (Ruemmler and Wilkes 1994).
    [[nodiscard]] double seek_seconds(std::int64_t sectors) const noexcept;
    /// Transfer (at the read or write rate), plus, unless distance == 1, seek and
    /// rotational latency, or for distance > 1 the gap's (distance − 1 sectors) time at
    /// that rate when it is shorter.
    [[nodiscard]] double io_seconds(const Io& io, std::optional<std::int64_t> distance) const noexcept;
};

/// A SATA SSD: a fixed latency per IO plus transfer; where the data lies costs nothing.
struct SsdModel {
    double io_latency_seconds = 80e-6;
    double transfer_bytes_per_second = 500e6;
    double write_latency_seconds = 40e-6;  ///< writes land in the drive's cache first
    double write_transfer_bytes_per_second = 450e6;
    /// Zeroing at the write rate; allocating costs one small metadata write.
    FirstWriteCost first_write{450e6, 0.1e-3};

    [[nodiscard]] double io_seconds(const Io& io, std::optional<std::int64_t> distance) const noexcept;
};

/// A thin-provisioned enterprise array behind a SAN link: a random IO pays the array's
/// read latency; an IO that starts less than `sequential_window_bytes` after the previous
/// IO's end (a forward gap of 0 … window − 512 bytes: distance 1 … window/512) is served
/// from the array's read-ahead cache at the lower latency; every IO pays the link's
/// transfer time.
struct ArrayModel {
    double random_io_seconds = 0.3e-3;
    double sequential_io_seconds = 0.05e-3;
    std::uint64_t sequential_window_bytes = 1 << 20;
    double transfer_bytes_per_second = 1e9;
    /// Writes are acknowledged from the array's write cache, sequential or not.
    double write_io_seconds = 0.1e-3;
    double write_transfer_bytes_per_second = 1e9;
    /// Calibrated from the published format times (docs/estimate.md §8.3).
    FirstWriteCost first_write;

    /// Whether an IO at `distance` counts as sequential for the array's read-ahead.
    [[nodiscard]] bool sequential(std::optional<std::int64_t> distance) const noexcept;
    [[nodiscard]] double io_seconds(const Io& io, std::optional<std::int64_t> distance) const noexcept;
};

/// The array of the published measurement (docs/estimate.md §8.3: HP 3PAR on SSD under
/// ESXi, a full NTFS format of a new 40 GiB disk in 537 s eager, 667 s lazy, 784 s thin):
/// writes at the rate that format reached, first writes as calibrated from it.
[[nodiscard]] ArrayModel format_calibrated_array() noexcept;

/// The three models `estimate` reports, with their documented default parameters.
struct DeviceModels {
    HddModel hdd;
    SsdModel ssd;
    ArrayModel array;
};

/// The names `--preset` accepts: "default" (DeviceModels{}) and "3par-format" (the array
/// replaced by format_calibrated_array).
[[nodiscard]] std::optional<DeviceModels> device_preset(std::string_view name);

}  // namespace guestfrag
