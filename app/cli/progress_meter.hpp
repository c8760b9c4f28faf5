// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "core/progress.hpp"

namespace guestfrag {
struct StepInfo;  // pipeline/step_info.hpp
enum class StepUnit;
}  // namespace guestfrag

namespace guestfrag::cli {

/// Whether progress is shown: nullopt (the default) when stderr is a terminal; true or
/// false as --progress or --no-progress force it.
void set_progress_display(std::optional<bool> shown);

/// The meter's line: `what`, then `step` ("step 2 of 6, copying the disk") and its count in
/// `unit`, or without a step the share done; the time left at the pace of the `seconds` the
/// step (or the count) has run.
[[nodiscard]] std::string progress_line(const std::string& what, const std::string& step, StepUnit unit,
                                        std::uint64_t done, std::uint64_t total, double seconds);

/// A one-line progress display on stderr, shown when stderr is a terminal (or as
/// set_progress_display says) and the work has run for more than half a second (short scans stay quiet):
/// "applying: step 2 of 6, copying the disk: at 1.16 GiB of the 2.00 GiB disk (120 MiB/s through it), about 4
/// s left", or for work without named steps "planning: 45.2 %, about 12 s left". Erases itself when
/// destroyed, so the command's own output starts on a clean line.
class ProgressMeter {
public:
    explicit ProgressMeter(std::string what);
    ~ProgressMeter();
    ProgressMeter(const ProgressMeter&) = delete;
    ProgressMeter& operator=(const ProgressMeter&) = delete;

    /// A Progress that feeds this meter; valid while the meter lives.
    [[nodiscard]] Progress progress();

    /// Erases the line, if shown, before other output; the next count draws it again.
    void clear();

    /// Step `number` of about `steps` begins (its count restarts, in `info`'s unit).
    void step(std::size_t number, std::size_t steps, const StepInfo& info);

private:
    void show(std::uint64_t done, std::uint64_t total);

    /// Steps begin on the use case's thread; counts also come from its hashing thread.
    std::mutex mutex_;
    std::string what_;
    bool enabled_;
    bool shown_ = false;
    std::string step_;  ///< "step 2 of 6, copying the disk"; "" without named steps
    StepUnit unit_{};
    std::uint64_t last_done_ = 0;
    std::uint64_t last_total_ = 0;
    std::chrono::steady_clock::time_point start_;
    std::chrono::steady_clock::time_point phase_start_;  ///< of the step, or of the count's last restart
    std::chrono::steady_clock::time_point last_;
};

}  // namespace guestfrag::cli
