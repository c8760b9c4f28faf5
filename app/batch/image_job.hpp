// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <map>
#include <optional>
#include <stop_token>
#include <string>

#include "app/batch/image_result.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/planner.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/compact.hpp"

namespace guestfrag::batch {

/// What the batch does with each image beyond analysing it.
struct JobOptions {
    /// Plan every volume with this strategy (nullopt: the recommended one for the image) and
    /// record the plan and its impact warnings; no planning when `plan` is false.
    bool plan = false;
    std::optional<Strategy> strategy;
    /// Placement order for the strategies that take one (nullopt: their default); a
    /// recommended strategy that takes none (thin-safe) plans without it.
    std::optional<PlacementOrder> order;
    /// The device models the plan's own IO (and the verdict) is timed on (--preset,
    /// --device-model).
    DeviceModels models;
    /// With `batch --verdict`: weigh every volume as `report` does (decide) and record the
    /// verdict.
    bool verdict = false;
    /// With the verdict: the storage deduplicates after the fact in chunks of this many
    /// bytes (VerdictOptions::dedup_chunk).
    std::optional<std::uint64_t> dedup_chunk;
    /// With `batch --apply-to`: carry the plan out into a new disk (implies `plan`).
    struct Apply {
        std::map<std::string, std::string> outputs;  ///< image path → output path (output_paths)
        ApplyOutputFormat format = ApplyOutputFormat::Raw;
        bool verify = true;
        bool allow_vss = false;
    };
    std::optional<Apply> apply;
    /// With `batch --compact-to`: write a compacted copy of the image (docs/compact.md).
    struct Compact {
        std::map<std::string, std::string> outputs;  ///< image path → output path (output_paths)
        CompactOptions options;  ///< all but the output and the limiter, which are each job's
    };
    std::optional<Compact> compact;  ///< never together with `apply`
};

/// Analyses (and optionally plans) the image at `path`, reading it through `limiter`.
/// With `options.apply`, then carries the plan of its NTFS volume out into
/// `options.apply->outputs.at(path)` with apply_to_copy (never replacing an existing file;
/// every byte it copies takes its tokens from `limiter` too) and records what it did; an
/// image without exactly one NTFS volume, or whose apply is refused or fails, is a failed
/// image (its figures kept, the error "apply: REASON"). With `options.compact`, compacts
/// the image into `options.compact->outputs.at(path)` with compact_to_copy (never replacing
/// a file; its copying and moving take tokens from `limiter`); a refused or failed
/// compaction fails the image the same way ("compact: REASON"). `path` must be in the outputs.
/// Never throws for a bad image: the result says ok = false with the one-line reason.
/// Throws Error(Cancelled) when `stop` is requested mid-way (nothing is to be recorded).
[[nodiscard]] ImageResult run_image_job(const std::string& path, const JobOptions& options, RateLimiter& limiter,
                                        std::stop_token stop);

}  // namespace guestfrag::batch
