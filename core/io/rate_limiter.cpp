// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/io/rate_limiter.hpp"

#include <algorithm>
#include <thread>

namespace guestfrag {

RateLimiter::RateLimiter(std::uint64_t bytes_per_second)
    : rate_(bytes_per_second),
      capacity_(static_cast<double>(bytes_per_second) / 4),
      tokens_(capacity_),
      last_(Clock::now()) {}

void RateLimiter::acquire(std::uint64_t bytes, std::stop_token stop) {
    requested_ += bytes;
    if (gate_) gate_(stop);
    if (rate_ == 0 || bytes == 0 || stop.stop_requested()) return;
    std::unique_lock lock(mutex_);
    const auto refill = [this] {
        const Clock::time_point now = Clock::now();
        tokens_ = std::min(capacity_, tokens_ + std::chrono::duration<double>(now - last_).count() *
                                                    static_cast<double>(rate_));
        last_ = now;
    };
    // Waiting for a full bucket (not for `bytes`) lets requests larger than the bucket
    // through; the debt they leave makes the next caller wait for it.
    const double needed = std::min(static_cast<double>(bytes), capacity_);
    for (refill(); tokens_ < needed; refill()) {
        if (stop.stop_requested()) return;
        const double seconds = (needed - tokens_) / static_cast<double>(rate_);
        // Sleep with the lock held: callers are served in turn, and no one can take tokens
        // that are being waited for. Bounded slices keep cancellation prompt.
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(seconds, 0.1)));
    }
    tokens_ -= static_cast<double>(bytes);
}

}  // namespace guestfrag
