// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <optional>
#include <stop_token>
#include <string>

#include "app/batch/image_result.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/planner.hpp"

namespace guestfrag::batch {

/// What the batch does with each image beyond analysing it.
struct JobOptions {
    /// Plan every volume with this strategy (nullopt: the recommended one for the image) and
    /// record the plan and its impact warnings; no planning when `plan` is false.
    bool plan = false;
    std::optional<Strategy> strategy;
};

/// Analyses (and optionally plans) the image at `path`, reading it through `limiter`.
/// Never throws for a bad image: the result says ok = false with the one-line reason.
/// Throws Error(Cancelled) when `stop` is requested mid-way (nothing is to be recorded).
[[nodiscard]] ImageResult run_image_job(const std::string& path, const JobOptions& options, RateLimiter& limiter,
                                        std::stop_token stop);

}  // namespace guestfrag::batch
