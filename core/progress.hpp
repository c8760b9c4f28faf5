// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>

#include "core/error.hpp"

namespace guestfrag {

/// Progress reporting and cancellation handed down through long core work.
/// Both members are optional; a default-constructed Progress does nothing.
struct Progress {
    /// Called with (done, total) in the unit of the current phase; may be called often.
    std::function<void(std::uint64_t done, std::uint64_t total)> report;
    std::stop_token stop;

    void update(std::uint64_t done, std::uint64_t total) const {
        if (stop.stop_requested()) throw Error(ErrorKind::Cancelled, "cancelled");
        if (report) report(done, total);
    }
};

}  // namespace guestfrag
