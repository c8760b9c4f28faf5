// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/progress.hpp"

namespace guestfrag::cli {

/// A one-line progress display on stderr, shown only when stderr is a terminal and the
/// work has run for more than half a second (short scans stay quiet). Erases itself when
/// destroyed.
class ProgressMeter {
public:
    explicit ProgressMeter(std::string what);
    ~ProgressMeter();
    ProgressMeter(const ProgressMeter&) = delete;
    ProgressMeter& operator=(const ProgressMeter&) = delete;

    /// A Progress that feeds this meter; valid while the meter lives.
    [[nodiscard]] Progress progress();

private:
    void show(std::uint64_t done, std::uint64_t total);

    std::string what_;
    bool enabled_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point last_;
};

}  // namespace guestfrag::cli
