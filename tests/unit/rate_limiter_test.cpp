// SPDX-License-Identifier: GPL-2.0-or-later
// RateLimiter's gate (schedule --compact holds work outside its windows through it).
#include <catch2/catch.hpp>

#include <stop_token>

#include "core/io/rate_limiter.hpp"

using namespace guestfrag;

TEST_CASE("a rate limiter's gate holds every acquire, limited or not, and a stop ends the hold", "[rate]") {
    for (const std::uint64_t rate : {std::uint64_t{0}, std::uint64_t{1} << 30}) {
        INFO(rate);
        RateLimiter limiter(rate);
        int passed = 0;
        limiter.set_gate([&](const std::stop_token&) { ++passed; });
        limiter.acquire(4096);
        limiter.acquire(0);
        limiter.acquire(1 << 20);
        CHECK(passed == 3);
        CHECK(limiter.requested() == 4096 + (1 << 20));
    }

    // 1 byte per second with an empty bucket would take a minute; the gate's stop returns at once.
    RateLimiter slow(1);
    slow.acquire(1);  // empties the quarter-byte bucket into debt
    std::stop_source stop;
    slow.set_gate([&](const std::stop_token& token) {
        CHECK(token.stop_possible());
        stop.request_stop();
    });
    slow.acquire(60, stop.get_token());
    CHECK(stop.stop_requested());
    CHECK(slow.requested() == 61);
}
