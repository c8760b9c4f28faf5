// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag calibrate`: the array model's parameters fitted to what fio measured on the
// user's own storage (docs/calibrate.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/estimate/device_model.hpp"
#include "core/estimate/fio_workload.hpp"
#include "core/estimate/written_map.hpp"

namespace guestfrag {

/// One direction (reads or writes) of one fio job: what fio measured, and the features the
/// array model times it by, counted on the job's IOs as `estimate` generates them.
struct CalibrationSample {
    bool write = false;
    std::uint64_t ios = 0;           ///< fio's total_ios
    std::uint64_t bs = 0;            ///< bytes per IO
    double measured_seconds = 0;     ///< fio's mean latency (lat_ns: submission to completion)
    double random_share = 0;         ///< reads: share of IOs the array serves as random
    double first_writes_per_io = 0;  ///< writes: blocks written for the first time, per IO
    double fitted_seconds = 0;       ///< the fitted model's mean latency for these IOs
};

/// One job of a fio JSON document.
struct CalibrationJob {
    std::string source;  ///< the JSON file it came from
    std::string name;    ///< fio's jobname
    std::string file;    ///< the file or device it ran on (fio's filename)
    std::string rw;      ///< fio's rw option
    /// Why the job is not used (one line), when it is not.
    std::optional<std::string> unusable;
    std::vector<CalibrationSample> samples;  ///< reads first, then writes; those with IOs
};

/// The fitted array model and how well it fits.
struct Calibration {
    ArrayModel array;
    /// Seconds one first write of a block of block_bytes cost on the measured storage
    /// (thin): array.first_write.block_seconds(Thin, block_bytes).
    double first_write_seconds = 0;
    double read_rms_residual = 0;  ///< root mean square of (fitted − measured) / measured
    double write_rms_residual = 0;
    /// Why the model may not describe the storage, one line each (docs/calibrate.md §4): an
    /// RMS residual over kBadFit, a sequential read fitted slower than a random one.
    std::vector<std::string> warnings;

    /// The RMS relative residual above which a fit is said not to describe the jobs.
    static constexpr double kBadFit = 0.25;
};

/// Fits the array model to fio's measurements (docs/calibrate.md). Jobs are taken in the
/// order they ran: documents in the order add() gets them, jobs in each document's order.
/// Every file a job names is taken as fresh (nothing written) when the first job names it,
/// and each job's writes are replayed into that file's written map, so that a write job's
/// first writes are counted in blocks of `block_bytes` (the zeroing block of the storage
/// fio ran on).
class FioCalibration {
public:
    /// Most IOs all jobs together are replayed for: what one `fio:` workload may issue, so
    /// that calibrate's time and memory stay those of one estimate.
    static constexpr std::uint64_t kMaxReplayedIos = FioJob::kMaxIos;

    explicit FioCalibration(std::uint64_t block_bytes) : block_(block_bytes) {}

    /// Adds the jobs of one document fio wrote with --output-format=json. A job it cannot
    /// use is kept with the reason in `unusable` (an error, trims, a queue deeper than 1,
    /// several jobs at once, mixed block sizes, no size, reads of blocks no earlier job
    /// wrote, …). Throws Error(Unsupported) when `doc` is not fio's JSON output.
    void add(const nlohmann::json& doc, const std::string& source);

    /// add() of the JSON file at `path` (a regular file or a pipe, read as JsonInput reads
    /// it). Throws Error as read_json_file and add do.
    void add_file(const std::string& path);

    [[nodiscard]] const std::vector<CalibrationJob>& jobs() const noexcept { return jobs_; }
    [[nodiscard]] std::uint64_t block_bytes() const noexcept { return block_; }

    /// Least squares of the relative residuals over the usable jobs, each parameter ≥ 0
    /// (reads: random, sequential, 1 / transfer rate; writes: latency, 1 / rate, one first
    /// write). Sets each sample's fitted_seconds. Throws Error(Unsupported, "too few usable
    /// jobs for array.KEY: …") naming the first parameter the jobs do not determine.
    [[nodiscard]] Calibration fit();

private:
    class Options;
    /// Reads one job's options and result into `job`, replaying its IOs into its file's
    /// written map (`replayed` set once they are); throws why it is unusable.
    void take(CalibrationJob& job, const Options& options, const nlohmann::json& result, bool& replayed);

    std::uint64_t block_;
    std::vector<CalibrationJob> jobs_;
    std::uint64_t replayed_ios_ = 0;
    std::map<std::string, WrittenMap> written_;  ///< per file
    /// Files a job wrote whose writes could not be replayed: their first writes are unknown.
    std::map<std::string, std::string> unknown_;
};

/// The fitted parameters as a --device-model file: {"array": {...}}, the keys
/// device_models_json prints, sequential_window_bytes (not fitted) left out.
[[nodiscard]] nlohmann::ordered_json calibrated_model_json(const ArrayModel& array);

}  // namespace guestfrag
