// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <future>
#include <stop_token>
#include <utility>

namespace guestfrag {

/// `work(stop_token)` on a thread of its own from when the object is made, for work that
/// runs beside its owner's (compact's copy beside the planning, the input's hashing beside
/// the copy). The object's end asks the work to stop and waits for it: work that reads
/// what its owner holds never outlives it, whatever the owner throws.
template <class T>
class Background {
public:
    /// Starts `work`. A stop requested of `also` (the user's cancel) stops it too.
    template <class Work>
    explicit Background(Work work, std::stop_token also = {})
        : also_(std::move(also), Halt{&halt_}),
          result_(std::async(std::launch::async, std::move(work), halt_.get_token())) {}
    ~Background() {
        halt_.request_stop();
        if (result_.valid()) result_.wait();
    }
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

    /// Whether the work has ended, after waiting up to `wait` for it.
    [[nodiscard]] bool ended_within(std::chrono::milliseconds wait) const {
        return result_.wait_for(wait) == std::future_status::ready;
    }
    /// Waits for the work; returns what it returned, throws what it threw. Call once.
    T get() { return result_.get(); }

private:
    struct Halt {
        std::stop_source* halt;
        void operator()() const noexcept { halt->request_stop(); }
    };

    std::stop_source halt_;  // before the others: both use it from their start
    std::stop_callback<Halt> also_;
    std::future<T> result_;
};

}  // namespace guestfrag
