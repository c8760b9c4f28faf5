// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "app/batch/image_job.hpp"
#include "app/batch/results_db.hpp"

namespace guestfrag::batch {

struct BatchOptions {
    unsigned jobs = 1;              ///< images analysed at once
    std::uint64_t read_rate = 0;    ///< bytes/s over all workers together; 0 = unlimited
    unsigned per_datastore = 0;     ///< most jobs at once on one storage device; 0 = no limit
    bool force = false;             ///< re-analyse images whose fingerprint is unchanged
    JobOptions job;
};

/// What happened to one image, reported as it happens (from the thread that stored it).
struct BatchEvent {
    enum class Kind {
        Skipped,  ///< unchanged since an earlier run analysed it
        Busy,     ///< claimed by another batch running on the same database
        Done,
    } kind = Kind::Done;
    std::string path;
    const ImageResult* result = nullptr;  ///< for Done
    std::int64_t holder = 0;              ///< for Busy: the run that has it
    std::size_t finished = 0;             ///< images finished (done or skipped) so far
    std::size_t total = 0;
};

struct BatchSummary {
    std::size_t total = 0;
    std::size_t analysed = 0;
    std::size_t failed = 0;
    std::size_t skipped = 0;
    std::size_t busy = 0;  ///< left to a concurrent batch that had claimed them
    bool interrupted = false;
    std::uint64_t bytes_read = 0;
    double seconds = 0;
};

/// Runs `images` through `options.jobs` worker threads, storing each result in `db` under
/// `run` as soon as it is finished (one transaction per image). An image stored as ok by an
/// earlier run with the same fingerprint is skipped unless options.force, and one claimed by
/// another batch running on the same database is left to it (ResultsDb::claim). A stop request
/// lets finished images stand, abandons those in flight (they are not recorded, so the next
/// run does them) and returns with `interrupted`. `on_event` is called under the store lock.
/// Throws only for database errors.
[[nodiscard]] BatchSummary run_batch(ResultsDb& db, std::int64_t run, const std::vector<std::string>& images,
                                     const BatchOptions& options, std::stop_token stop,
                                     const std::function<void(const BatchEvent&)>& on_event = {});

}  // namespace guestfrag::batch
