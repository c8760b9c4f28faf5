// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <span>

#include "core/estimate/device_model.hpp"
#include "core/estimate/histogram.hpp"
#include "core/estimate/io.hpp"

namespace guestfrag {

/// Estimated seconds to serve a workload on each device model (DeviceModels).
struct DeviceSeconds {
    double hdd = 0;
    double ssd = 0;
    double array = 0;
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
    DeviceSeconds device_seconds;
    Histogram io_length = io_length_histogram();          ///< ios values in total
    Histogram seek_distance = seek_distance_histogram();  ///< ios − 1 values (none for the first)
};

/// Summarises an IO stream in issue order. Pure; O(ios · log buckets).
[[nodiscard]] IoStats summarize_ios(std::span<const Io> ios, const DeviceModels& models = {});

}  // namespace guestfrag
