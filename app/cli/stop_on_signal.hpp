// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <csignal>
#include <stop_token>
#include <thread>

namespace guestfrag::cli {

/// Turns SIGINT and SIGTERM into a stop request for as long as it lives, so that long
/// multi-threaded work ends cleanly (finished results kept) instead of being killed.
/// Construct it before starting worker threads: it blocks both signals in the calling
/// thread, the workers inherit that, and one watcher thread receives them. The previous
/// signal mask is restored on destruction.
class StopOnSignal {
public:
    StopOnSignal();
    ~StopOnSignal();
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

    [[nodiscard]] std::stop_token token() const { return source_.get_token(); }
    /// The signal that requested the stop, 0 if none did.
    [[nodiscard]] int signal() const { return signal_; }

private:
    sigset_t old_mask_{};
    std::stop_source source_;
    volatile int signal_ = 0;
    std::jthread watcher_;
};

}  // namespace guestfrag::cli
