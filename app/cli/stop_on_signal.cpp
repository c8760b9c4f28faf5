// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/stop_on_signal.hpp"

#include <pthread.h>

#include <ctime>

namespace guestfrag::cli {

StopOnSignal::StopOnSignal() {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, &old_mask_);
    watcher_ = std::jthread([this, mask](std::stop_token done) {
        // Polls so that it also notices when the work is over and it should end.
        const timespec tick{0, 100'000'000};
        while (!done.stop_requested()) {
            const int sig = sigtimedwait(&mask, nullptr, &tick);
            if (sig > 0) {
                signal_ = sig;
                source_.request_stop();
            }
        }
    });
}

StopOnSignal::~StopOnSignal() {
    watcher_.request_stop();
    watcher_.join();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace guestfrag::cli
