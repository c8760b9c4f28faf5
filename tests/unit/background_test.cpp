// SPDX-License-Identifier: GPL-2.0-or-later
// Background: work beside its owner's, which never outlives the owner (compact's copy beside
// the planning, the input's hashing beside the copy).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <thread>

#include "core/io/background.hpp"

using namespace guestfrag;

namespace {

/// Runs until asked to stop; counts the runs that saw the request.
int until_stopped(const std::stop_token& stop, std::atomic<int>& stopped) {
    while (!stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return ++stopped;
}

}  // namespace

TEST_CASE("background work: its result, its error, and its stop when the owner goes or cancels",
          "[background]") {
    Background<int> answer([](const std::stop_token&) { return 42; });
    CHECK(answer.get() == 42);

    Background<int> failing([](const std::stop_token&) -> int { throw std::runtime_error("disk gone"); });
    CHECK_THROWS_WITH(failing.get(), "disk gone");

    // Work that runs until stopped: the owner's end stops it and waits for it, so the count
    // is there when the object is gone.
    std::atomic<int> stopped{0};
    {
        Background<int> endless([&](const std::stop_token& stop) { return until_stopped(stop, stopped); });
        CHECK_FALSE(endless.ended_within(std::chrono::milliseconds(20)));
    }
    CHECK(stopped == 1);

    // The user's cancel reaches it through `also`, before the owner goes.
    std::stop_source cancel;
    Background<int> cancelled([&](const std::stop_token& stop) { return until_stopped(stop, stopped); },
                              cancel.get_token());
    cancel.request_stop();
    CHECK(cancelled.ended_within(std::chrono::seconds(60)));
    CHECK(cancelled.get() == 2);

    // A cancel made before the work starts stops it from its first look.
    Background<int> late([&](const std::stop_token& stop) { return until_stopped(stop, stopped); },
                         cancel.get_token());
    CHECK(late.get() == 3);
}
