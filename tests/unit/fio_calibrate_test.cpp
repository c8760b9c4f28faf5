// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag calibrate` (docs/calibrate.md): fio's JSON read job by job, the features of
// each job counted on its IOs, the array model fitted to the latencies; jobs it cannot use
// named with the reason, parameters the jobs do not determine named.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/estimate/device_model_json.hpp"
#include "core/estimate/fio_calibrate.hpp"
#include "core/estimate/fio_workload.hpp"
#include "core/model/volume_map.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
using namespace guestfrag::test;
using Json = nlohmann::json;

namespace {

struct JobSpec {
    std::string name;
    std::string rw;
    std::uint64_t bs;
    std::uint64_t offset;
    std::uint64_t size;
};

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;

/// The shape of docs/calibrate.fio, smaller: random and sequential writes at 4K, 64K and
/// 1M on fresh regions, then reads and rewrites of the same regions.
std::vector<JobSpec> documented_jobs() {
    std::vector<JobSpec> jobs;
    std::uint64_t offset = 0;
    std::vector<std::pair<std::string, JobSpec>> regions;
    for (const std::uint64_t bs : {4 * kKiB, 64 * kKiB, kMiB})
        for (const std::string order : {"rand", "seq"}) {
            const std::uint64_t size = bs == kMiB ? 16 * kMiB : 2 * kMiB;
            regions.push_back(
                {order, JobSpec{order + "-" + std::to_string(bs / kKiB) + "k", "", bs, offset, size}});
            offset += size;
        }
    for (const std::string phase : {"fresh", "read", "rewrite"})
        for (auto [order, spec] : regions) {
            const std::string direction = phase == "read" ? "read" : "write";
            spec.name = phase + "-" + spec.name;
            spec.rw = (order == "rand" ? "rand" : "") + direction;
            jobs.push_back(spec);
        }
    return jobs;
}

FioJob fio_job(const JobSpec& spec) {
    return parse_fio_job("rw=" + spec.rw + ",bs=" + std::to_string(spec.bs) +
                         ",offset=" + std::to_string(spec.offset) + ",size=" + std::to_string(spec.size));
}

/// fio's JSON for `jobs` run one after another on one fresh file of storage behaving
/// exactly as `array` does with first writes of `block` bytes: each direction's mean
/// latency is the model's, over the job's IOs as estimate makes them.
Json noise_free_output(const std::vector<JobSpec>& jobs, const ArrayModel& array, std::uint64_t block) {
    Json doc{{"fio version", "fio-3.33"},
             {"global options",
              {{"filename", "cal.dat"}, {"ioengine", "psync"}, {"iodepth", "1"}, {"direct", "1"}}},
             {"jobs", Json::array()}};
    WrittenMap written(block);
    for (const JobSpec& spec : jobs) {
        double seconds[2] = {0, 0};
        std::uint64_t ios[2] = {0, 0};
        std::optional<Io> previous;
        for (const Io& io : fio_ios(fio_job(spec), spec.offset + spec.size, VolumeMap{})) {
            const auto distance =
                previous ? std::optional<std::int64_t>(seek_distance(*previous, io)) : std::nullopt;
            previous = io;
            seconds[io.write] += array.io_seconds(io, distance) +
                                 static_cast<double>(written.replay(io)) *
                                     array.first_write.block_seconds(Provisioning::Thin, block);
            ++ios[io.write];
        }
        Json job{{"jobname", spec.name},
                 {"error", 0},
                 {"job options",
                  {{"rw", spec.rw},
                   {"bs", std::to_string(spec.bs / kKiB) + "k"},
                   {"offset", std::to_string(spec.offset / kKiB) + "k"},
                   {"size", std::to_string(spec.size / kKiB) + "k"}}}};
        for (const int write : {0, 1}) {
            const double mean_ns = ios[write] ? seconds[write] / static_cast<double>(ios[write]) * 1e9 : 0;
            job[write ? "write" : "read"] = {{"total_ios", ios[write]},
                                             {"lat_ns", {{"mean", mean_ns}, {"N", ios[write]}}}};
        }
        doc["jobs"].push_back(job);
    }
    return doc;
}

/// An array whose 4 KiB first write (40.24 µs) costs more than writing the block's zeros
/// at its write rate: calibrate splits it into that zeroing and the rest as allocation.
ArrayModel reference_array() {
    ArrayModel a;
    a.random_io_seconds = 180e-6;
    a.sequential_io_seconds = 45e-6;
    a.transfer_bytes_per_second = 700e6;
    a.write_io_seconds = 60e-6;
    a.write_transfer_bytes_per_second = 400e6;
    a.first_write.zero_bytes_per_second = a.write_transfer_bytes_per_second;
    a.first_write.allocate_seconds = 30e-6;
    return a;
}

void check_recovered(const Calibration& fit, const ArrayModel& want) {
    const auto close = [](double got, double expected) {
        return std::abs(got - expected) <= 1e-6 * expected;
    };
    CHECK(close(fit.array.random_io_seconds, want.random_io_seconds));
    CHECK(close(fit.array.sequential_io_seconds, want.sequential_io_seconds));
    CHECK(close(fit.array.transfer_bytes_per_second, want.transfer_bytes_per_second));
    CHECK(close(fit.array.write_io_seconds, want.write_io_seconds));
    CHECK(close(fit.array.write_transfer_bytes_per_second, want.write_transfer_bytes_per_second));
    CHECK(close(fit.array.first_write.zero_bytes_per_second, want.first_write.zero_bytes_per_second));
    CHECK(close(fit.array.first_write.allocate_seconds, want.first_write.allocate_seconds));
    CHECK(fit.read_rms_residual < 1e-9);
    CHECK(fit.write_rms_residual < 1e-9);
}

/// A job entry as fio writes it, with `options` over the defaults and one direction's
/// IOs and mean latency.
Json job_json(const std::string& name, const Json& options, const char* direction, std::uint64_t ios,
              double mean_ns) {
    Json job{{"jobname", name}, {"error", 0}, {"job options", options}};
    job[direction] = {{"total_ios", ios}, {"lat_ns", {{"mean", mean_ns}}}};
    return job;
}

/// `base` with `extra`'s keys set.
Json with(Json base, const Json& extra) {
    base.update(extra);
    return base;
}

std::string unusable(const FioCalibration& cal, const std::string& name) {
    for (const CalibrationJob& job : cal.jobs())
        if (job.name == name) return job.unusable.value_or("");
    FAIL("no job " << name);
    return {};
}

std::string fit_refusal(FioCalibration& cal) {
    try {
        (void)cal.fit();
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Unsupported);
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("calibrate: noise-free latencies give back the array model that made them",
          "[estimate][calibrate]") {
    const ArrayModel want = reference_array();
    FioCalibration cal(4 * kKiB);
    cal.add(noise_free_output(documented_jobs(), want, 4 * kKiB), "run.json");
    REQUIRE(cal.jobs().size() == 18);
    for (const CalibrationJob& job : cal.jobs()) CHECK_FALSE(job.unusable);
    const Calibration fit = cal.fit();
    check_recovered(fit, want);
    CHECK(fit.warnings.empty());
    // One first write: the 4 KiB of zeros at 400 MB/s (10.24 µs) plus 30 µs allocating.
    CHECK(fit.first_write_seconds == Approx(4096 / 400e6 + 30e-6).epsilon(1e-6));
    for (const CalibrationJob& job : cal.jobs())
        for (const CalibrationSample& s : job.samples)
            CHECK(s.fitted_seconds == Approx(s.measured_seconds).epsilon(1e-9));

    // The model file reads back as a device model with the fitted values.
    const DeviceModels back =
        read_device_models(Json::parse(calibrated_model_json(fit.array).dump()), DeviceModels{});
    CHECK(back.array.random_io_seconds == fit.array.random_io_seconds);
    CHECK(back.array.sequential_window_bytes == ArrayModel{}.sequential_window_bytes);
    CHECK(back.hdd.rpm == HddModel{}.rpm);
}

TEST_CASE("calibrate: a fit that does not describe the storage is said to", "[estimate][calibrate]") {
    SECTION("a sequential read slower than a random one") {
        ArrayModel inverted = reference_array();
        inverted.sequential_io_seconds = 2 * inverted.random_io_seconds;
        FioCalibration cal(4 * kKiB);
        cal.add(noise_free_output(documented_jobs(), inverted, 4 * kKiB), "run.json");
        const Calibration fit = cal.fit();
        check_recovered(fit, inverted);
        REQUIRE(fit.warnings.size() == 1);
        CHECK(fit.warnings[0].starts_with("a sequential read is fitted slower than a random one"));
    }
    SECTION("reads measured three times slower in half the jobs: no model fits them") {
        Json doc = noise_free_output(documented_jobs(), reference_array(), 4 * kKiB);
        for (std::size_t i = 0; i < doc["jobs"].size(); i += 2) {
            Json& mean = doc["jobs"][i]["read"]["lat_ns"]["mean"];
            mean = mean.get<double>() * 3;
        }
        FioCalibration cal(4 * kKiB);
        cal.add(doc, "run.json");
        const Calibration fit = cal.fit();
        REQUIRE(fit.read_rms_residual > Calibration::kBadFit);
        CHECK(fit.write_rms_residual < 1e-9);
        REQUIRE(!fit.warnings.empty());
        CHECK(fit.warnings[0] ==
              "the reads fit badly (RMS residual " +
                  std::to_string(static_cast<int>(std::lround(fit.read_rms_residual * 100))) +
                  " %): the model's few costs do not describe this storage (a cache, tiers or a throttle?); "
                  "see each job's residual");
        // The CLI says so under the model, and --json carries it.
        const test::WorkDir work("calibrate-bad-fit");
        std::ofstream(work / "run.json") << doc.dump();
        const auto text = test::run_cli({"calibrate", (work / "run.json").string()});
        CHECK(text.status == 0);
        CHECK(text.out.find("\n  warning: the reads fit badly (RMS residual ") != std::string::npos);
        const auto json = test::run_cli({"calibrate", (work / "run.json").string(), "--json"});
        CHECK(Json::parse(json.out)["warnings"][0] == fit.warnings[0]);
    }
}

TEST_CASE("calibrate: what each job's IOs are, counted by hand", "[estimate][calibrate]") {
    // Block 64 KiB. A fresh sequential 1 MiB job in 4 KiB writes: 256 IOs, 16 first writes.
    // Then 1 MiB reads of it: 16 sequential 64 KiB reads, the first one random (no IO before).
    // A fresh random 4 KiB write job over the next 1 MiB: 16 blocks among 256 IOs.
    FioCalibration cal(64 * kKiB);
    const Json global{{"filename", "f"}};
    Json doc{{"global options", global}, {"jobs", Json::array()}};
    doc["jobs"].push_back(
        job_json("seq", {{"rw", "write"}, {"bs", "4k"}, {"size", "1m"}}, "write", 256, 50e3));
    doc["jobs"].push_back(
        job_json("read", {{"rw", "read"}, {"bs", "64k"}, {"size", "1m"}}, "read", 16, 90e3));
    doc["jobs"].push_back(job_json(
        "rand", {{"rw", "randwrite"}, {"bs", "4k"}, {"offset", "1m"}, {"size", "1m"}}, "write", 256, 70e3));
    cal.add(doc, "x.json");
    REQUIRE(cal.jobs().size() == 3);
    CHECK(cal.jobs()[0].samples.at(0).first_writes_per_io == 16.0 / 256);
    CHECK(cal.jobs()[1].samples.at(0).random_share == 1.0 / 16);
    CHECK(cal.jobs()[1].samples.at(0).measured_seconds == Approx(90e-6));
    CHECK(cal.jobs()[2].samples.at(0).first_writes_per_io == 16.0 / 256);
    CHECK(cal.jobs()[2].file == "f");
}

TEST_CASE("calibrate: jobs it cannot use are named with the reason, the rest are used",
          "[estimate][calibrate][bad]") {
    const ArrayModel want = reference_array();
    Json doc = noise_free_output(documented_jobs(), want, 4 * kKiB);
    const Json read_4k{{"rw", "randread"}, {"bs", "4k"}, {"size", "1m"}};
    auto bad = [&](const std::string& name, Json options, const char* direction = "read") {
        Json job = job_json(name, options, direction, 256, 100e3);
        job["job options"]["filename"] = "other-" + name;
        return job;
    };
    Json& jobs = doc["jobs"];
    Json failed = bad("failed", read_4k);
    failed["error"] = 5;
    jobs.push_back(failed);
    jobs.push_back(bad("deep", with(read_4k, {{"iodepth", "8"}})));
    jobs.push_back(bad("many", with(read_4k, {{"numjobs", "4"}})));
    jobs.push_back(bad("trim", with(read_4k, {{"rw", "randtrim"}})));
    jobs.push_back(bad("skip", with(read_4k, {{"rw", "read:8k"}})));
    jobs.push_back(bad("nosize", {{"rw", "read"}, {"bs", "4k"}}));
    jobs.push_back(bad("share", with(read_4k, {{"size", "50%"}})));
    jobs.push_back(bad("split", with(read_4k, {{"bssplit", "4k/50:64k/50"}})));
    jobs.push_back(bad("zipf", with(read_4k, {{"random_distribution", "zipf:1.2"}})));
    jobs.push_back(bad("sizes", {{"rw", "randrw"}, {"bs", "4k,64k"}, {"size", "1m"}}));
    Json old = bad("old", read_4k);
    old["read"] = {{"total_ios", 256}, {"lat", {{"mean", 100.0}}}};  // fio 2: microseconds under "lat"
    jobs.push_back(old);
    // A write job that cannot be replayed leaves its file's written blocks unknown.
    Json lost = job_json("lost", {{"rw", "randwrite"}, {"bs", "4k"}, {"size", "1k"}}, "write", 1, 100e3);
    lost["job options"]["filename"] = "shared";
    jobs.push_back(lost);
    Json after = job_json("after", {{"rw", "randwrite"}, {"bs", "4k"}, {"size", "1m"}}, "write", 256, 100e3);
    after["job options"]["filename"] = "shared";
    jobs.push_back(after);
    jobs.push_back(bad("holes", read_4k));  // nothing wrote its file before
    Json huge = bad("huge", read_4k);
    huge["read"]["total_ios"] = 20'000'000;  // a few bytes claiming a long replay
    jobs.push_back(huge);
    Json floating = bad("floating", read_4k);
    floating["read"]["total_ios"] = 1e29;  // no integer type holds it: refused, not converted
    jobs.push_back(floating);
    jobs.push_back("not an object");

    FioCalibration cal(4 * kKiB);
    cal.add(doc, "run.json");
    CHECK(unusable(cal, "failed") == "fio reported error 5");
    CHECK(unusable(cal, "deep") == "iodepth 8: the models serve one IO at a time");
    CHECK(unusable(cal, "many") == "numjobs 4: IOs of several jobs overlapped");
    CHECK_THAT(unusable(cal, "trim"), Catch::StartsWith("rw=randtrim: the models replay"));
    CHECK_THAT(unusable(cal, "skip"), Catch::StartsWith("rw=read:8k: the models replay"));
    CHECK(unusable(cal, "nosize") == "no size option: the region the job covered is unknown");
    CHECK(unusable(cal, "share") == "size=50%: a share of a size the output does not give");
    CHECK(unusable(cal, "split") == "bssplit: IOs of several sizes");
    CHECK(unusable(cal, "zipf") == "random_distribution=zipf:1.2: not every block once per pass");
    CHECK(unusable(cal, "sizes") == "bs=4k,64k: reads and writes of different sizes");
    CHECK(unusable(cal, "old") == "read: no lat_ns.mean (fio before 3.0 reports latency in another form)");
    CHECK_THAT(unusable(cal, "lost"), Catch::StartsWith("fio option 'bs'"));
    CHECK(
        unusable(cal, "after") ==
        "follows 'lost' on shared, whose writes could not be replayed: which blocks were written is unknown");
    CHECK(unusable(cal, "holes") ==
          "reads 1048576 bytes no earlier job wrote: a file system answers holes without reading the device");
    CHECK(unusable(cal, "huge") ==
          "20000000 reads and 0 writes: more than the 10000000 IOs all jobs together may replay");
    CHECK(unusable(cal, "floating") == "total_ios is not a whole number: 1e+29");
    CHECK(unusable(cal, "job 35") == "not a JSON object");
    check_recovered(cal.fit(), want);
}

TEST_CASE("calibrate: too few usable jobs name the parameter they leave open", "[estimate][calibrate][bad]") {
    const std::vector<JobSpec> all = documented_jobs();
    auto without = [&](const std::function<bool(const JobSpec&)>& drop) {
        std::vector<JobSpec> kept;
        for (const JobSpec& s : all)
            if (!drop(s)) kept.push_back(s);
        FioCalibration cal(4 * kKiB);
        cal.add(noise_free_output(kept, reference_array(), 4 * kKiB), "run.json");
        return fit_refusal(cal);
    };
    CHECK(without([](const JobSpec& s) { return s.rw == "read"; }) ==
          "too few usable jobs for array.sequential_io_seconds: it needs reads mostly in sequence");
    CHECK(without([](const JobSpec& s) { return s.rw == "randread"; }) ==
          "too few usable jobs for array.random_io_seconds: it needs reads mostly at random");
    CHECK(without([](const JobSpec& s) { return s.rw.ends_with("read") && s.bs != 4 * kKiB; }) ==
          "too few usable jobs for array.transfer_bytes_per_second: it needs reads of two block sizes");
    CHECK(without([](const JobSpec& s) { return s.name.starts_with("rewrite"); }) ==
          "too few usable jobs for array.first_write: it needs writes to blocks no earlier job wrote and "
          "writes "
          "to blocks written before");
    // Reads need the writes before them (a hole is not read from the device): writes at
    // queue depth 4 are replayed but not used.
    Json deep = noise_free_output(all, reference_array(), 4 * kKiB);
    for (Json& job : deep["jobs"])
        if (job["job options"]["rw"].get<std::string>().ends_with("write"))
            job["job options"]["iodepth"] = "4";
    FioCalibration reads_only(4 * kKiB);
    reads_only.add(deep, "run.json");
    CHECK(fit_refusal(reads_only) == "too few usable jobs for array.write_io_seconds: it needs writes");
}

TEST_CASE("calibrate: the CLI refuses what is not fio output and a fit it cannot make",
          "[estimate][calibrate][bad][cli]") {
    const auto dir = scratch_dir();
    const auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir / name) << text;
        return (dir / name).string();
    };
    const std::string not_json = write("calibrate-not-json.json", "fio: no such option\n");
    CommandResult r = run_cli({"calibrate", not_json});
    CHECK(r.status == 2);
    CHECK_THAT(r.err,
               Catch::StartsWith("guestfrag: error: " + not_json + ": the fio output is not valid JSON"));

    r = run_cli({"calibrate", write("calibrate-other.json", "{\"hdd\": {}}")});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("not fio JSON output (no \"jobs\" array"));

    Json reads_only = noise_free_output({{"r", "randread", 4096, 0, kMiB}}, reference_array(), 4096);
    reads_only["jobs"][0]["job options"]["iodepth"] = "4";
    r = run_cli({"calibrate", write("calibrate-few.json", reads_only.dump())});
    CHECK(r.status == 2);
    CHECK(r.err ==
          "guestfrag: error: calibrate: too few usable jobs for array.random_io_seconds: it needs reads "
          "mostly at "
          "random (1 of 1 jobs not used; r: iodepth 4: the models serve one IO at a time)\n");

    r = run_cli({"calibrate", not_json, "--block", "1000"});
    CHECK(r.status == 1);
}

TEST_CASE("calibrate: the CLI writes a model file estimate reads, and prints each job's fit",
          "[estimate][calibrate][cli]") {
    const auto dir = scratch_dir();
    const auto input = dir / "calibrate-noise-free.json";
    std::ofstream(input) << noise_free_output(documented_jobs(), reference_array(), 4096).dump();
    const auto model = dir / "calibrate-model.json";
    CommandResult r = run_cli({"calibrate", input.string(), "-o", model.string()});
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("fio jobs: 18, used 18"));
    CHECK_THAT(r.out, Catch::Contains("random read            180.0 us + bytes / 700.0 MB/s"));
    CHECK_THAT(r.out, Catch::Contains("first write of a block 40.2 us"));
    CHECK_THAT(r.out, Catch::Contains("RMS residual           reads 0.0 %, writes 0.0 %"));
    const DeviceModels back = read_device_model_file(model.string(), DeviceModels{});
    CHECK(back.array.write_io_seconds == Approx(60e-6).epsilon(1e-6));

    r = run_cli({"calibrate", input.string(), "--json"});
    REQUIRE(r.status == 0);
    const Json report = Json::parse(r.out);
    CHECK(report["format"] == "guestfrag.calibrate.v1");
    CHECK(report["jobs"].size() == 18);
    CHECK(report["jobs"][0]["samples"][0]["first_writes_per_io"] == 1.0);
    CHECK(report["device_models"]["array"]["sequential_io_seconds"].get<double>() ==
          Approx(45e-6).epsilon(1e-6));
}
