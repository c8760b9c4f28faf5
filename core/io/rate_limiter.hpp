// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>

namespace guestfrag {

/// A token bucket that keeps image reads under `bytes_per_second`, shared by every reader
/// that holds a reference (it is thread-safe), so that production storage is never read
/// faster than the administrator allowed. The bucket holds at most a quarter of a second of
/// reads, so a long idle period does not allow a long burst.
class RateLimiter {
public:
    using Clock = std::chrono::steady_clock;

    /// 0 bytes per second: unlimited (acquire never waits).
    explicit RateLimiter(std::uint64_t bytes_per_second);

    /// A gate holds every acquire() until the work may go on at all (`schedule --compact`:
    /// until a maintenance window is open), before the bucket is asked; it returns early
    /// when `stop` is requested. Set before the limiter is shared; none: never holds.
    using Gate = std::function<void(const std::stop_token& stop)>;
    void set_gate(Gate gate) { gate_ = std::move(gate); }

    /// Passes the gate, then takes `bytes` from the bucket, sleeping until it holds them. A
    /// request larger than the bucket is granted once the bucket is full and leaves it in
    /// debt, so the long-run rate holds for any request size. Returns early (without the
    /// tokens) when `stop` is requested; the caller checks it.
    void acquire(std::uint64_t bytes, std::stop_token stop = {});

    [[nodiscard]] std::uint64_t rate() const { return rate_; }
    /// Bytes asked for through acquire() so far, limited or not: what the work reported.
    [[nodiscard]] std::uint64_t requested() const { return requested_.load(); }

private:
    std::uint64_t rate_;
    double capacity_;
    std::mutex mutex_;
    double tokens_;
    Clock::time_point last_;
    std::atomic<std::uint64_t> requested_{0};
    Gate gate_;
};

}  // namespace guestfrag
