// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "pipeline/apply.hpp"

namespace guestfrag::gui {

/// Where a running apply_to_copy is: the step it began last and that step's progress.
/// Written by apply's thread (ApplyOptions::on_step, Progress::report), read by the window's
/// timer. The step and its numbers change together under one lock, so a reader never sees
/// one step's count against another's total. Thread-safe; no Qt.
class ApplyMeter {
public:
    using Clock = std::chrono::steady_clock;

    /// What the meter holds at one moment.
    struct Snapshot {
        std::optional<ApplyStep> step;  ///< none before the first step
        std::size_t step_number = 0;    ///< 1-based, among the steps begun
        std::uint64_t done = 0;         ///< in the step's unit (apply_step_unit)
        std::uint64_t total = 0;
        double seconds = 0;  ///< since the step began
    };

    void begin(ApplyStep step) {
        const std::lock_guard lock(mutex_);
        seen_.push_back(step);
        done_ = total_ = 0;
        started_ = Clock::now();
    }
    void update(std::uint64_t done, std::uint64_t total) {
        const std::lock_guard lock(mutex_);
        done_ = done;
        total_ = total;
    }
    [[nodiscard]] Snapshot snapshot() const {
        const std::lock_guard lock(mutex_);
        Snapshot s;
        if (seen_.empty()) return s;
        s.step = seen_.back();
        s.step_number = seen_.size();
        s.done = done_;
        s.total = total_;
        s.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
        return s;
    }
    /// Every step begun so far, in order.
    [[nodiscard]] std::vector<ApplyStep> steps_seen() const {
        const std::lock_guard lock(mutex_);
        return seen_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<ApplyStep> seen_;
    std::uint64_t done_ = 0;
    std::uint64_t total_ = 0;
    Clock::time_point started_;
};

}  // namespace guestfrag::gui
