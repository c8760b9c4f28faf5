// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "core/estimate/device_model.hpp"
#include "core/estimate/histogram.hpp"
#include "core/estimate/io.hpp"
#include "core/estimate/written_map.hpp"

namespace guestfrag {

/// The largest seek distance counted as near-sequential: a 4 KiB page of 512-byte sectors.
inline constexpr std::int64_t kNearSequentialSectors = 8;

/// Estimated seconds to serve a workload on each device model (DeviceModels).
struct DeviceSeconds {
    double hdd = 0;
    double ssd = 0;
    double array = 0;
};

/// One provisioning type's result beside the others (docs/estimate.md §8): the IO time of
/// DeviceSeconds plus first_writes · FirstWriteCost::block_seconds on each model.
struct ProvisionedSeconds {
    Provisioning type = Provisioning::Eager;
    std::uint64_t first_writes = 0;  ///< zeroing blocks written for the first time (0 on eager)
    DeviceSeconds device_seconds;
};

/// What `estimate` reports for one workload on one volume state (docs/design.md §4: the JSON "R").
struct IoStats {
    std::uint64_t ios = 0;
    std::uint64_t bytes = 0;
    double mean_io_bytes = 0;      ///< bytes / ios; 0 without IOs
    std::uint64_t sequential = 0;  ///< IOs at seek distance exactly +1
    /// 100 · sequential / (ios − 1): the share among IOs that have a distance (all but the
    /// first); 0 with fewer than two IOs.
    double sequential_percent = 0;
    /// IOs at seek distance +1 … +8 (the sequential ones included): the next IO starts
    /// within a 4 KiB page of the previous one's end. An IO that ends at a file's last
    /// sector, before the next file's first page, lands here and not at +1 (docs/estimate.md §5).
    std::uint64_t near_sequential = 0;
    /// 100 · near_sequential / (ios − 1); 0 with fewer than two IOs.
    double near_sequential_percent = 0;
    DeviceSeconds device_seconds;
    std::uint64_t writes = 0;        ///< write IOs among `ios`
    std::uint64_t written_bytes = 0;  ///< Σ length of the write IOs
    std::uint64_t zero_block = 0;     ///< the written map's block; 0 when no map was given
    /// Zeroing blocks the writes touched that the map did not have: first writes on lazy and thin.
    std::uint64_t first_writes = 0;
    /// Eager, lazy and thin side by side, in that order (eager never pays a first write).
    std::array<ProvisionedSeconds, 3> provisioned{};
    Histogram io_length = io_length_histogram();          ///< ios values in total
    Histogram seek_distance = seek_distance_histogram();  ///< ios − 1 values (none for the first)
};

/// What a number of IOs taking `seconds` of device time amount to (0s when no time passed).
struct Throughput {
    double iops = 0;                  ///< ios / seconds
    double mb_per_second = 0;         ///< bytes / 10^6 / seconds
    double mean_latency_seconds = 0;  ///< seconds / ios (queue depth 1: the mean IO's latency)
};
[[nodiscard]] Throughput throughput(std::uint64_t ios, std::uint64_t bytes, double seconds) noexcept;

/// Summarises an IO stream one IO at a time, in issue order, so that a stream of millions
/// of IOs (a fio job) is never held. With `written` (copied: the caller's map is not
/// changed), every write is replayed on it to count first writes; without, no write is a
/// first write. O(log buckets + log written runs) an IO; memory the copy of `written`.
class IoSummary {
public:
    explicit IoSummary(const DeviceModels& models = {}, const WrittenMap* written = nullptr);
    void add(const Io& io);
    /// The figures of the IOs added so far.
    [[nodiscard]] IoStats stats() const;

private:
    DeviceModels models_;
    std::optional<WrittenMap> map_;
    std::optional<Io> previous_;
    IoStats s_;
};

/// IoSummary of a whole stream held in memory.
[[nodiscard]] IoStats summarize_ios(std::span<const Io> ios, const DeviceModels& models = {},
                                    const WrittenMap* written = nullptr);

}  // namespace guestfrag
