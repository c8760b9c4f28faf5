// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/progress_meter.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "pipeline/sizes.hpp"
#include "pipeline/step_info.hpp"

namespace guestfrag::cli {

namespace {

std::optional<bool> forced;  // set_progress_display's, before any meter exists

}  // namespace

void set_progress_display(std::optional<bool> shown) { forced = shown; }

std::string progress_line(const std::string& what, const std::string& step, StepUnit unit, std::uint64_t done,
                          std::uint64_t total, double seconds) {
    std::string line = what + ": ";
    if (step.empty()) {
        char percent[16];
        std::snprintf(percent, sizeof percent, "%.1f %%",
                      total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total));
        line += percent;
    } else {
        line += step;
        if (unit == StepUnit::DiskOffset) {
            // A position in the disk, holes passed over included: its pace is not what is
            // copied (--rate limits that).
            line += ": at " + format_size(done) + " of the " + format_size(total) + " disk";
            if (seconds >= kEstimateAfterSeconds)
                line += " (" + format_size(static_cast<std::uint64_t>(static_cast<double>(done) / seconds)) +
                        "/s through it)";
        } else if (unit != StepUnit::None) {
            const char* counted = unit == StepUnit::Records ? " MFT records"
                                  : unit == StepUnit::Moves ? " moves"
                                                            : " streams";
            line += ": " + std::to_string(done) + " of " + std::to_string(total) + counted;
        }
    }
    if (const auto left = seconds_left(seconds, done, total))
        line += ", about " + duration_text(*left) + " left";
    return line;
}

ProgressMeter::ProgressMeter(std::string what)
    : what_(std::move(what)),
      enabled_(forced.value_or(::isatty(STDERR_FILENO) == 1)),
      start_(std::chrono::steady_clock::now()),
      phase_start_(start_) {}

ProgressMeter::~ProgressMeter() { clear(); }

void ProgressMeter::clear() {
    const std::lock_guard lock(mutex_);
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
}

Progress ProgressMeter::progress() {
    Progress p;
    if (enabled_) p.report = [this](std::uint64_t done, std::uint64_t total) { show(done, total); };
    return p;
}

void ProgressMeter::step(std::size_t number, std::size_t steps, const StepInfo& info) {
    const std::lock_guard lock(mutex_);
    step_ = "step " + std::to_string(number) + " of " + std::to_string(std::max(steps, number)) + ", " +
            std::string(info.name);
    unit_ = info.unit;
    phase_start_ = std::chrono::steady_clock::now();
    last_done_ = last_total_ = 0;
}

void ProgressMeter::show(std::uint64_t done, std::uint64_t total) {
    using namespace std::chrono_literals;
    const std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    // Work without named steps restarts its count for each phase: time it from there.
    if (step_.empty() && (done < last_done_ || total != last_total_)) phase_start_ = now;
    last_done_ = done;
    last_total_ = total;
    if (now - start_ < 500ms || now - last_ < 100ms) return;
    last_ = now;
    shown_ = true;
    const double seconds = std::chrono::duration<double>(now - phase_start_).count();
    const std::string line = progress_line(what_, step_, unit_, done, total, seconds);
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
}

}  // namespace guestfrag::cli
