// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/fio_calibrate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"
#include "core/estimate/device_model_json.hpp"
#include "core/estimate/fio_workload.hpp"
#include "core/estimate/workload_options.hpp"
#include "core/io/json_input.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

namespace {

using Json = nlohmann::json;

/// Why a job cannot be used; caught per job, the rest go on.
struct Unusable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The limits device_models_json's reader puts on a rate and a time.
constexpr double kMaxRate = 1e13;
constexpr double kMaxSeconds = 3600;

/// The whole number `object[key]` holds, 0 when absent. Checked first: nlohmann converts a
/// float such as 1e29 to an integer type without a range check.
std::uint64_t whole_number(const Json& object, const char* key) {
    if (!object.contains(key)) return 0;
    const Json& v = object.at(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
        throw Unusable(std::string(key) + " is not a whole number: " + v.dump());
    return v.get<std::uint64_t>();
}

/// The measured side of one direction of a job: {IOs, mean latency in seconds}.
std::pair<std::uint64_t, double> measured(const Json& result, const char* direction) {
    if (!result.contains(direction)) return {0, 0};
    const Json& d = result.at(direction);
    const std::uint64_t ios = whole_number(d, "total_ios");
    if (ios == 0) return {0, 0};
    if (!d.contains("lat_ns") || !d.at("lat_ns").contains("mean"))
        throw Unusable(std::string(direction) +
                       ": no lat_ns.mean (fio before 3.0 reports latency in another form)");
    const double mean = d.at("lat_ns").at("mean").get<double>() * 1e-9;
    if (!(mean > 0) || !std::isfinite(mean))
        throw Unusable(std::string(direction) + ": no latency measured (lat_ns.mean is 0)");
    return {ios, mean};
}

/// Number of linearly independent rows (Gaussian elimination, partial pivoting).
template <std::size_t N>
std::size_t rank(std::vector<std::array<double, N>> rows) {
    std::size_t r = 0;
    for (std::size_t c = 0; c < N && r < rows.size(); ++c) {
        std::size_t pivot = r;
        for (std::size_t i = r; i < rows.size(); ++i)
            if (std::abs(rows[i][c]) > std::abs(rows[pivot][c])) pivot = i;
        if (std::abs(rows[pivot][c]) < 1e-9) continue;
        std::swap(rows[r], rows[pivot]);
        for (std::size_t i = r + 1; i < rows.size(); ++i) {
            const double f = rows[i][c] / rows[r][c];
            for (std::size_t k = c; k < N; ++k) rows[i][k] -= f * rows[r][k];
        }
        ++r;
    }
    return r;
}

using Samples = std::vector<CalibrationSample*>;

/// Whether `samples` hold IOs of at least two sizes.
bool two_sizes(const Samples& samples) {
    return std::any_of(samples.begin(), samples.end(),
                       [&](const CalibrationSample* s) { return s->bs != samples.front()->bs; });
}

struct Parameter {
    const char* key;
    const char* needs;  ///< what jobs determine it, in words
    /// Whether the samples hold what `needs` says. A share of a few per cent of sequential
    /// IOs in a random job determines a latency in exact arithmetic, not in measurements.
    bool (*has)(const Samples&);
};

/// One linear least-squares problem: mean latency m = features · θ, fitted on the relative
/// residual so that a 4 KiB job's microseconds weigh as much as a 1 MiB job's milliseconds.
/// Relative to the fitted latency, not the measured one: dividing by the measurement gives a
/// job measured slow less weight than one measured fast, and pulls the fit below the mean
/// (by 5–10 % on this machine's disk). So the weights come from the previous fit, starting
/// from the measurements (iteratively reweighted least squares).
struct Problem {
    explicit Problem(std::array<Parameter, 3> p) : parameters(p) {}

    std::array<Parameter, 3> parameters;
    std::vector<std::array<double, 3>> features;
    Samples samples;

    void add(CalibrationSample& sample, const std::array<double, 3>& f) {
        features.push_back(f);
        samples.push_back(&sample);
    }

    [[nodiscard]] double predicted(std::size_t i, const std::array<double, 3>& theta) const {
        return features[i][0] * theta[0] + features[i][1] * theta[1] + features[i][2] * theta[2];
    }

    /// Throws naming the first parameter whose jobs are missing, or else the last one the
    /// rows leave open: its unit vector is not in their span (columns scaled alike, so that
    /// seconds and bytes compare). The last, because features that move together (a fresh
    /// write's bytes and its first writes) leave the later, rarer one open.
    void check_determined() const {
        for (const Parameter& p : parameters)
            if (samples.empty() || !p.has(samples)) refuse(p);
        std::array<double, 3> scale{};
        for (const auto& row : features)
            for (std::size_t k = 0; k < 3; ++k) scale[k] = std::max(scale[k], row[k]);
        std::vector<std::array<double, 3>> scaled;
        for (const auto& row : features) {
            std::array<double, 3> s{};
            for (std::size_t k = 0; k < 3; ++k) s[k] = scale[k] > 0 ? row[k] / scale[k] : 0;
            scaled.push_back(s);
        }
        const std::size_t base = rank(scaled);
        for (std::size_t k = 3; k-- > 0;) {
            auto with_unit = scaled;
            with_unit.push_back({});
            with_unit.back()[k] = 1;
            if (scale[k] == 0 || rank(with_unit) > base) refuse(parameters[k]);
        }
    }

    [[noreturn]] static void refuse(const Parameter& p) {
        throw Error(ErrorKind::Unsupported,
                    std::string("too few usable jobs for ") + p.key + ": it needs " + p.needs);
    }

    /// θ ≥ 0 minimising Σ ((features · θ − m) / fitted)², reweighted five times.
    [[nodiscard]] std::array<double, 3> solve() const {
        std::vector<double> scale;
        for (const CalibrationSample* s : samples) scale.push_back(s->measured_seconds);
        std::array<double, 3> theta{};
        for (int round = 0; round < 5; ++round) {
            theta = solve_weighted(scale);
            for (std::size_t i = 0; i < samples.size(); ++i)
                if (const double f = predicted(i, theta); f > 0) scale[i] = f;
        }
        return theta;
    }

    /// θ ≥ 0 minimising Σ ((features · θ − m) / scale)²: the least-squares solution on each
    /// subset of the parameters (the others 0), the best one without a negative value. Every
    /// feature and measurement is ≥ 0, so a single parameter's solution always qualifies.
    [[nodiscard]] std::array<double, 3> solve_weighted(const std::vector<double>& scale) const {
        std::array<double, 3> best{};
        double best_error = INFINITY;
        for (unsigned subset = 1; subset < 8; ++subset) {
            std::vector<std::size_t> cols;
            for (std::size_t k = 0; k < 3; ++k)
                if (subset >> k & 1) cols.push_back(k);
            const std::size_t n = cols.size();
            // Normal equations [AᵀA | Aᵀb], A = features / scale, b = m / scale, solved by
            // elimination with partial pivoting.
            std::vector<std::vector<double>> m(n, std::vector<double>(n + 1, 0));
            for (std::size_t r = 0; r < features.size(); ++r) {
                const double b = samples[r]->measured_seconds / scale[r];
                for (std::size_t i = 0; i < n; ++i) {
                    const double ai = features[r][cols[i]] / scale[r];
                    for (std::size_t j = 0; j < n; ++j) m[i][j] += ai * features[r][cols[j]] / scale[r];
                    m[i][n] += ai * b;
                }
            }
            bool singular = false;
            for (std::size_t c = 0; c < n && !singular; ++c) {
                std::size_t pivot = c;
                for (std::size_t i = c; i < n; ++i)
                    if (std::abs(m[i][c]) > std::abs(m[pivot][c])) pivot = i;
                if (std::abs(m[pivot][c]) < 1e-300) singular = true;
                std::swap(m[c], m[pivot]);
                for (std::size_t i = 0; i < n && !singular; ++i) {
                    if (i == c) continue;
                    const double f = m[i][c] / m[c][c];
                    for (std::size_t k = c; k <= n; ++k) m[i][k] -= f * m[c][k];
                }
            }
            if (singular) continue;
            std::array<double, 3> theta{};
            bool feasible = true;
            for (std::size_t i = 0; i < n; ++i) {
                theta[cols[i]] = m[i][n] / m[i][i];
                feasible = feasible && theta[cols[i]] >= 0;
            }
            if (!feasible) continue;
            double error = 0;
            for (std::size_t r = 0; r < features.size(); ++r) {
                const double e = (predicted(r, theta) - samples[r]->measured_seconds) / scale[r];
                error += e * e;
            }
            if (error < best_error) {
                best_error = error;
                best = theta;
            }
        }
        return best;
    }

    /// Sets every sample's fitted latency; returns the RMS of (fitted − measured) / measured.
    double apply(const std::array<double, 3>& theta) const {
        double sum = 0;
        for (std::size_t i = 0; i < samples.size(); ++i) {
            samples[i]->fitted_seconds = predicted(i, theta);
            const double e =
                (samples[i]->fitted_seconds - samples[i]->measured_seconds) / samples[i]->measured_seconds;
            sum += e * e;
        }
        return samples.empty() ? 0 : std::sqrt(sum / static_cast<double>(samples.size()));
    }
};

/// Bytes per second from seconds per byte, within what a model file accepts.
double rate(double seconds_per_byte) {
    return seconds_per_byte > 1 / kMaxRate ? 1 / seconds_per_byte : kMaxRate;
}

}  // namespace

/// fio writes every option as a string; the job's own options override [global]'s.
class FioCalibration::Options {
public:
    Options(const Json& global, const Json& job) : global_(global), job_(job) {}

    [[nodiscard]] std::optional<std::string> text(const char* key) const {
        for (const Json* o : {&job_, &global_})
            if (o->is_object() && o->contains(key)) {
                const Json& v = (*o)[key];
                return v.is_string() ? v.get<std::string>() : v.dump();
            }
        return std::nullopt;
    }
    /// A size as fio writes it ("4k", "16m"); a percentage is a share of a file whose size
    /// the JSON does not give.
    [[nodiscard]] std::optional<std::uint64_t> size(const char* key) const {
        const auto t = text(key);
        if (!t) return std::nullopt;
        if (t->find('%') != std::string::npos)
            throw Unusable(std::string(key) + "=" + *t + ": a share of a size the output does not give");
        return parse_option_size("fio", key, *t);
    }
    [[nodiscard]] std::uint64_t number(const char* key, std::uint64_t fallback) const {
        const auto t = text(key);
        return t ? parse_option_number("fio", key, *t) : fallback;
    }

    /// fio's bs: one size for every direction, or "READ,WRITE[,TRIM]" (an empty part: the
    /// read size).
    [[nodiscard]] std::array<std::uint64_t, 2> block_sizes() const {
        const std::string text = this->text("bs").value_or(this->text("blocksize").value_or("4k"));
        const std::size_t comma = text.find(',');
        const std::string read = text.substr(0, comma);
        std::string write = comma == std::string::npos ? read : text.substr(comma + 1);
        write = write.substr(0, write.find(','));
        const std::uint64_t r = read.empty() ? 4096 : parse_option_size("fio", "bs", read);
        const std::uint64_t w = write.empty() ? r : parse_option_size("fio", "bs", write);
        return {r, w};
    }

private:
    const Json& global_;
    const Json& job_;
};

void FioCalibration::add(const Json& doc, const std::string& source) {
    if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array())
        throw Error(ErrorKind::Unsupported,
                    "not fio JSON output (no \"jobs\" array; fio writes it with --output-format=json)");
    static const Json kNone = Json::object();
    const Json& global = doc.contains("global options") ? doc["global options"] : kNone;
    for (const Json& result : doc["jobs"]) {
        CalibrationJob job;
        job.source = source;
        job.name = "job " + std::to_string(jobs_.size() + 1);
        bool replayed = false;
        try {
            if (!result.is_object()) throw Unusable("not a JSON object");
            if (result.contains("jobname") && result["jobname"].is_string())
                job.name = result["jobname"].get<std::string>();
            take(job, Options(global, result.contains("job options") ? result["job options"] : kNone), result,
                 replayed);
        } catch (const Unusable& e) {
            job.unusable = e.what();
        } catch (const Error& e) {
            job.unusable = e.what();
        } catch (const Json::exception& e) {
            job.unusable = std::string("malformed result: ") + e.what();
        }
        // A job that may have written what it could not replay leaves its file's written
        // blocks unknown: the first writes of later jobs on it cannot be counted.
        const auto rw = fio_rw(job.rw);
        const bool reads_only = rw && (*rw == FioJob::Rw::Read || *rw == FioJob::Rw::RandRead);
        if (job.unusable && !replayed && !reads_only && !unknown_.contains(job.file))
            unknown_[job.file] = job.name;
        jobs_.push_back(std::move(job));
    }
}

void FioCalibration::take(CalibrationJob& job, const Options& options, const Json& result, bool& replayed) {
    // fio's default file is named after the job; directory= prefixes it.
    job.file = options.text("filename").value_or(job.name + ".0.0");
    if (const auto dir = options.text("directory")) job.file = *dir + "/" + job.file;
    job.rw = options.text("rw").value_or(options.text("readwrite").value_or("read"));
    if (const auto it = unknown_.find(job.file); it != unknown_.end())
        throw Unusable("follows '" + it->second + "' on " + job.file +
                       ", whose writes could not be replayed: which blocks were written is unknown");
    const auto rw = fio_rw(job.rw);
    if (!rw)
        throw Unusable("rw=" + job.rw +
                       ": the models replay read, write, randread, randwrite, rw and randrw");

    FioJob fio;
    fio.rw = *rw;
    const auto [read_bs, write_bs] = options.block_sizes();
    const bool reads = fio.rw != FioJob::Rw::Write && fio.rw != FioJob::Rw::RandWrite;
    const bool writes = fio.rw != FioJob::Rw::Read && fio.rw != FioJob::Rw::RandRead;
    if (reads && writes && read_bs != write_bs)
        throw Unusable("bs=" + options.text("bs").value_or("") + ": reads and writes of different sizes");
    fio.bs = reads ? read_bs : write_bs;
    if (fio.bs == 0 || fio.bs % kSectorBytes != 0)
        throw Unusable("bs " + std::to_string(fio.bs) + " is not a multiple of 512");
    fio.size = options.size("size");
    if (!fio.size) throw Unusable("no size option: the region the job covered is unknown");
    fio.offset = options.size("offset").value_or(0);
    if (options.text("rwmixwrite"))
        fio.rwmixread =
            100 - static_cast<unsigned>(std::min<std::uint64_t>(100, options.number("rwmixwrite", 0)));
    fio.rwmixread =
        static_cast<unsigned>(std::min<std::uint64_t>(100, options.number("rwmixread", fio.rwmixread)));
    fio.randseed = options.number("randseed", fio.randseed);
    const auto [read_ios, read_seconds] = measured(result, "read");
    const auto [write_ios, write_seconds] = measured(result, "write");
    if (read_ios + write_ios == 0) throw Unusable("no IO completed");
    // Replaying costs time and written-map memory in proportion to the IOs the output
    // claims, whatever its size: all jobs together get what one `fio:` workload may issue.
    if (read_ios > kMaxReplayedIos || write_ios > kMaxReplayedIos ||
        read_ios + write_ios > kMaxReplayedIos - replayed_ios_)
        throw Unusable(std::to_string(read_ios) + " reads and " + std::to_string(write_ios) +
                       " writes: more than the " + std::to_string(kMaxReplayedIos) +
                       " IOs all jobs together may replay");
    // As many IOs as fio completed (a time_based job wraps around its region as fio does).
    fio.number_ios = read_ios + write_ios;
    (void)check_fio_target(fio, fio.offset + *fio.size);

    // The IOs as estimate makes them: the array's sequential rule, the file's written map.
    WrittenMap& map = written_.try_emplace(job.file, block_).first->second;
    const ArrayModel array;
    std::optional<Io> previous;
    std::uint64_t random_reads = 0, replayed_reads = 0, replayed_writes = 0, first_writes = 0, holes = 0;
    for_each_fio_io(fio, fio.offset + *fio.size, VolumeMap{}, [&](const Io& io) {
        const std::optional<std::int64_t> distance =
            previous ? std::optional<std::int64_t>(seek_distance(*previous, io)) : std::nullopt;
        previous = io;
        if (io.write) {
            ++replayed_writes;
            first_writes += map.replay(io);
        } else {
            ++replayed_reads;
            random_reads += array.sequential(distance) ? 0 : 1;
            holes += io.length - map.bytes_in_written(io);
        }
    });
    replayed = true;
    replayed_ios_ += *fio.number_ios;
    // A short mixed job may draw no IO of a direction fio did some of: nothing to count it by.
    if ((read_ios > 0 && replayed_reads == 0) || (write_ios > 0 && replayed_writes == 0))
        throw Unusable("too few IOs to replay its mix of reads and writes");

    // What makes the measurement one the models cannot stand for, though its IOs happened.
    if (const auto error = whole_number(result, "error"); error != 0)
        throw Unusable("fio reported error " + std::to_string(error));
    if (const auto depth = options.number("iodepth", 1); depth > 1)
        throw Unusable("iodepth " + std::to_string(depth) + ": the models serve one IO at a time");
    if (const auto jobs = options.number("numjobs", 1); jobs > 1)
        throw Unusable("numjobs " + std::to_string(jobs) + ": IOs of several jobs overlapped");
    for (const char* key : {"bsrange", "blocksize_range", "bssplit"})
        if (options.text(key)) throw Unusable(std::string(key) + ": IOs of several sizes");
    if (const auto dist = options.text("random_distribution"); dist && *dist != "random")
        throw Unusable("random_distribution=" + *dist + ": not every block once per pass");
    if (writes && options.text("norandommap") && fio.random())
        throw Unusable("norandommap: fio may write a block twice, so its first writes cannot be counted");
    if (holes > 0)
        throw Unusable("reads " + std::to_string(holes) +
                       " bytes no earlier job wrote: a file system answers holes without reading the device");

    if (read_ios > 0) {
        CalibrationSample s;
        s.ios = read_ios;
        s.bs = fio.bs;
        s.measured_seconds = read_seconds;
        s.random_share = static_cast<double>(random_reads) / static_cast<double>(replayed_reads);
        job.samples.push_back(s);
    }
    if (write_ios > 0) {
        CalibrationSample s;
        s.write = true;
        s.ios = write_ios;
        s.bs = fio.bs;
        s.measured_seconds = write_seconds;
        s.first_writes_per_io = static_cast<double>(first_writes) / static_cast<double>(replayed_writes);
        job.samples.push_back(s);
    }
}

void FioCalibration::add_file(const std::string& path) {
    add(read_json_file(path, "fio output", std::chrono::seconds(30)), path);
}

Calibration FioCalibration::fit() {
    const auto any = [](const Samples&) { return true; };
    Problem reads(
        {Parameter{"array.random_io_seconds", "reads mostly at random",
                   [](const Samples& s) {
                       return std::any_of(s.begin(), s.end(), [](auto* x) { return x->random_share >= 0.5; });
                   }},
         Parameter{"array.sequential_io_seconds", "reads mostly in sequence",
                   [](const Samples& s) {
                       return std::any_of(s.begin(), s.end(), [](auto* x) { return x->random_share < 0.5; });
                   }},
         Parameter{"array.transfer_bytes_per_second", "reads of two block sizes", two_sizes}});
    Problem writes(
        {Parameter{"array.write_io_seconds", "writes", any},
         Parameter{"array.write_transfer_bytes_per_second", "writes of two block sizes", two_sizes},
         Parameter{
             "array.first_write", "writes to blocks no earlier job wrote and writes to blocks written before",
             [](const Samples& s) {
                 return std::any_of(s.begin(), s.end(), [](auto* x) { return x->first_writes_per_io > 0; });
             }}});
    for (CalibrationJob& job : jobs_) {
        if (job.unusable) continue;
        for (CalibrationSample& s : job.samples) {
            const auto bytes = static_cast<double>(s.bs);
            if (s.write)
                writes.add(s, {1, bytes, s.first_writes_per_io});
            else
                reads.add(s, {s.random_share, 1 - s.random_share, bytes});
        }
    }
    reads.check_determined();
    writes.check_determined();
    const auto r = reads.solve();
    const auto w = writes.solve();

    Calibration c;
    c.read_rms_residual = reads.apply(r);
    c.write_rms_residual = writes.apply(w);
    c.array.random_io_seconds = std::min(r[0], kMaxSeconds);
    c.array.sequential_io_seconds = std::min(r[1], kMaxSeconds);
    c.array.transfer_bytes_per_second = rate(r[2]);
    c.array.write_io_seconds = std::min(w[0], kMaxSeconds);
    c.array.write_transfer_bytes_per_second = rate(w[1]);
    // Only the sum of zeroing and allocating one block shows in fresh writes: the zeros are
    // taken as written at the write rate as far as the fitted cost allows (an array that
    // writes its zeros), the rest is allocation.
    const double per_block = std::min(w[2], kMaxSeconds);
    const auto block = static_cast<double>(block_);
    const double zeroing = block / c.array.write_transfer_bytes_per_second;
    c.array.first_write.zero_bytes_per_second =
        per_block >= zeroing ? c.array.write_transfer_bytes_per_second
                             : (per_block > 0 ? std::min(kMaxRate, block / per_block) : kMaxRate);
    c.array.first_write.allocate_seconds = std::max(0.0, per_block - zeroing);
    c.first_write_seconds = c.array.first_write.block_seconds(Provisioning::Thin, block_);
    // The model has one cost per random and per sequential read, one per write: a device
    // whose cache, tiers or throttle give the same kind of IO different costs fits badly,
    // and the estimate then holds only for jobs like the measured ones.
    const auto percent = [](double share) {
        return std::to_string(static_cast<int>(std::lround(share * 100)));
    };
    for (const auto& [what, rms] :
         {std::pair{"reads", c.read_rms_residual}, std::pair{"writes", c.write_rms_residual}})
        if (rms > Calibration::kBadFit)
            c.warnings.push_back(
                std::string("the ") + what + " fit badly (RMS residual " + percent(rms) +
                " %): the model's few costs do not describe this storage (a cache, tiers or a "
                "throttle?); see each job's residual");
    if (c.array.sequential_io_seconds > c.array.random_io_seconds)
        c.warnings.push_back(
            "a sequential read is fitted slower than a random one: the jobs did not measure "
            "what sequence saves (a cache or too few IOs?); a plan that makes reads sequential "
            "is estimated slower under this model");
    return c;
}

nlohmann::ordered_json calibrated_model_json(const ArrayModel& array) {
    DeviceModels models;
    models.array = array;
    nlohmann::ordered_json fitted = device_models_json(models)["array"];
    fitted.erase("sequential_window_bytes");
    return {{"array", fitted}};
}

}  // namespace guestfrag
