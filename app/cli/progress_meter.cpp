// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/progress_meter.hpp"

#include <unistd.h>

#include <cstdio>

namespace guestfrag::cli {

ProgressMeter::ProgressMeter(std::string what)
    : what_(std::move(what)), enabled_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

ProgressMeter::~ProgressMeter() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
}

Progress ProgressMeter::progress() {
    Progress p;
    if (enabled_) p.report = [this](std::uint64_t done, std::uint64_t total) { show(done, total); };
    return p;
}

void ProgressMeter::show(std::uint64_t done, std::uint64_t total) {
    using namespace std::chrono_literals;
    const auto now = std::chrono::steady_clock::now();
    if (now - start_ < 500ms || now - last_ < 100ms) return;
    last_ = now;
    shown_ = true;
    const double pct = total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total);
    std::fprintf(stderr, "\r%s: %5.1f%% (%llu/%llu)\033[K", what_.c_str(), pct, static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total));
    std::fflush(stderr);
}

}  // namespace guestfrag::cli
