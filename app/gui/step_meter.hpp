// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/progress.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/compact.hpp"

namespace guestfrag::gui {

/// What a StepMeter holds at one moment.
template <typename Step>
struct StepSnapshot {
    std::optional<Step> step;     ///< none before the first step
    std::size_t step_number = 0;  ///< 1-based, among the steps begun
    std::uint64_t done = 0;       ///< in the step's unit (the pipeline header says it per step)
    std::uint64_t total = 0;
    double seconds = 0;  ///< since the step began
};

/// Where a running pipeline use case that reports its steps (apply_to_copy's ApplyStep,
/// compact_to_copy's CompactStep) is: the step it began last and that step's progress.
/// Written by the work's thread (the options' on_step, Progress::report), read by the
/// window's timer. The step and its numbers change together under one lock, so a reader
/// never sees one step's count against another's total. Thread-safe; no Qt.
template <typename Step>
class StepMeter {
public:
    using Clock = std::chrono::steady_clock;
    using Snapshot = StepSnapshot<Step>;

    void begin(Step step) {
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
    [[nodiscard]] std::vector<Step> steps_seen() const {
        const std::lock_guard lock(mutex_);
        return seen_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<Step> seen_;
    std::uint64_t done_ = 0;
    std::uint64_t total_ = 0;
    Clock::time_point started_;
};

using ApplyMeter = StepMeter<ApplyStep>;
using CompactMeter = StepMeter<CompactStep>;

/// `options` (ApplyOptions, CompactOptions) for a run the window follows: each step begun is
/// told to `meter`, and every byte copied takes its tokens from `limiter` (which the
/// progress dialog reads the bytes copied from).
template <typename Options, typename Step>
[[nodiscard]] Options metered_options(Options options, RateLimiter* limiter,
                                      const std::shared_ptr<StepMeter<Step>>& meter) {
    options.limiter = limiter;
    options.on_step = [meter](Step step) { meter->begin(step); };
    return options;
}

/// The progress to hand the work: `progress`'s stop token, its reports going into `meter`
/// rather than the job's own counters (the step's unit changes with each step).
template <typename Step>
[[nodiscard]] Progress metered_progress(const Progress& progress,
                                        const std::shared_ptr<StepMeter<Step>>& meter) {
    Progress metered;
    metered.stop = progress.stop;
    metered.report = [meter](std::uint64_t done, std::uint64_t total) { meter->update(done, total); };
    return metered;
}

}  // namespace guestfrag::gui
