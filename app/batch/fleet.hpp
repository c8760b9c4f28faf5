// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/batch/results_db.hpp"

namespace guestfrag::batch {

/// One image of the fleet as its newest successful analysis left it (docs/batch.md, "Fleet").
struct FleetImage {
    std::string path;
    std::string host;       ///< of the run that analysed it last
    std::string datastore;  ///< mount point of its file system; empty for rows before schema 8
    std::string analyzed_at;
    std::uint64_t volumes = 0;
    double fragmentation_percent = 0;  ///< its most fragmented volume's
    std::uint64_t excess_fragments = 0;
    std::uint64_t reclaimable_bytes = 0;
    /// Summed over its planned volumes; absent when no volume was planned (batch --plan).
    std::optional<std::uint64_t> thin_growth_bytes;
    /// Offload commands of a full copy at 4 MiB transfers, now and re-laid (docs/copy.md §2);
    /// absent for rows before schema 5 and 8.
    std::optional<std::uint64_t> copy_commands;
    std::optional<std::uint64_t> copy_relaid_commands;
    /// With `batch --verdict`: its volumes weighed, those with a plan recommended, and over
    /// those the seconds the plans save a run and their own IO seconds (docs/verdict.md, the
    /// device decided on); the sums absent when no plan is recommended.
    std::uint64_t weighed_volumes = 0;
    std::uint64_t recommended_volumes = 0;
    std::optional<double> seconds_saved;
    std::optional<double> plan_io_seconds;
    /// The storage work the plans cause once (docs/verdict.md §2); a row recorded before
    /// schema 10 counts its own IO, the work the rule weighed then.
    std::optional<double> work_seconds;
    /// A plan is recommended for one of its volumes: the sums above are there.
    [[nodiscard]] bool recommended() const { return seconds_saved && work_seconds; }
    /// The trend: successful analyses recorded, and fragmentation_percent at the first of them.
    std::uint64_t analyses = 0;
    double first_fragmentation_percent = 0;
};

/// The images of one datastore or one host, summed.
struct FleetGroup {
    std::string name;
    std::uint64_t images = 0;
    double max_fragmentation_percent = 0;
    double mean_fragmentation_percent = 0;
    std::uint64_t excess_fragments = 0;
    std::uint64_t reclaimable_bytes = 0;
    std::uint64_t thin_growth_bytes = 0;  ///< of the planned images
    std::uint64_t copy_commands = 0;      ///< of the images that have both copy figures
    std::uint64_t copy_relaid_commands = 0;
};

struct FleetFailure {
    std::string path;
    std::string error;
};

enum class FleetRank { Fragmentation, Reclaimable, Growth, Copy, Gain };

struct FleetReport {
    std::vector<FleetImage> images;      ///< ranked, highest first
    std::vector<FleetGroup> datastores;  ///< by reclaimable bytes, then name
    std::vector<FleetGroup> hosts;
    std::vector<FleetFailure> failed;  ///< images whose newest analysis failed, by path
};

/// What every image of `db` has at stake, ranked by `rank` (ties by path): fragmentation
/// (the most fragmented volume's %), reclaimable bytes, the thin growth its plan would cause,
/// the copy commands a re-laid copy saves (now − re-laid), or the gain per cost of its
/// verdict: seconds saved a run per second of the plans' own IO (images with no plan
/// recommended after, then those never weighed).
[[nodiscard]] FleetReport fleet_report(ResultsDb& db, FleetRank rank);

}  // namespace guestfrag::batch
