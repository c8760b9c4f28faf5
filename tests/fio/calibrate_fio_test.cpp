// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag calibrate` on real measurements: fio runs the jobs of docs/calibrate.fio on a
// file of the build directory's file system, calibrate fits the array model, and estimate
// predicts a job the calibration did not see. Built apart and run alone (RUN_SERIAL): the
// latencies are the measurement, and other tests' IO beside them would be part of it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"

using namespace guestfrag::test;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr int kRounds = 2;
constexpr int kJobs = 18;  ///< docs/calibrate.fio's
constexpr int kFresh = 6;  ///< of which the first write the target's regions
constexpr const char* kCheck = "check";
/// The job the calibration does not see: mixed reads and writes of 16 KiB, at random, on
/// the written area (fresh-seq-64k's region), as fio and as estimate's `fio:` write it.
constexpr const char* kCheckJob = "rw=randrw\nrwmixread=70\nbs=16k\noffset=64m\nsize=16m\n";
constexpr const char* kCheckWorkload = "fio:rw=randrw,rwmixread=70,bs=16k,offset=64m,size=16m";

/// docs/calibrate.fio's jobs `rounds` times in one fio run, the check job after each of
/// them once the fresh ones have written the target. A shared virtual disk's latency drifts
/// with its neighbours' load, by ±25 % within a minute: interleaved, the calibration and the
/// check see the same drift (run apart, their ratio strayed from 0.71 to 1.27 here).
std::string interleaved_jobs(int rounds) {
    const std::string file = file_contents(std::string(GUESTFRAG_DOCS_DIR) + "/calibrate.fio");
    std::size_t at = file.find("\n[fresh-");
    REQUIRE(at != std::string::npos);
    const std::string global = file.substr(0, at + 1);
    std::vector<std::string> jobs;
    while (at != std::string::npos) {
        const std::size_t next = file.find("\n[", at + 1);
        jobs.push_back(file.substr(at + 1, next == std::string::npos ? std::string::npos : next - at));
        at = next;
    }
    REQUIRE(jobs.size() == kJobs);
    std::string out = global;
    int checks = 0;
    for (int r = 0; r < rounds; ++r)
        for (std::size_t j = 0; j < jobs.size(); ++j) {
            // Later rounds' fresh jobs write written blocks: calibrate counts them as rewrites.
            out += std::regex_replace(jobs[j], std::regex(R"(^\[([a-z0-9-]+)\])"),
                                      "[$1-" + std::to_string(r) + "]");
            if (r > 0 || j + 1 >= kFresh)
                out += "\n[" + std::string(kCheck) + "-" + std::to_string(checks++) + "]\n" + kCheckJob;
        }
    return out;
}

/// Seconds fio's IOs of one job took: Σ over directions of mean latency × IOs.
double measured_seconds(const Json& job) {
    double seconds = 0;
    for (const char* direction : {"read", "write"})
        seconds += job.at(direction).at("lat_ns").at("mean").get<double>() * 1e-9 *
                   job.at(direction).at("total_ios").get<double>();
    return seconds;
}

/// One calibration and its check on a fresh target: what fio measured in the check jobs
/// and what estimate, with the model fitted to the other jobs, says they take.
struct Attempt {
    double measured = 0;
    double estimated = 0;
    std::string calibration_report;
};

Attempt calibrate_and_check(const fs::path& dir, const std::string& tag) {
    const fs::path target = dir / ("calibrate-" + tag + ".dat");
    const fs::path jobs = dir / ("calibrate-" + tag + ".fio");
    const fs::path output = dir / ("calibrate-" + tag + ".json");
    const fs::path calibration = dir / ("calibrate-jobs-" + tag + ".json");
    const fs::path model = dir / ("calibrate-model-" + tag + ".json");
    std::ofstream(jobs) << interleaved_jobs(kRounds);
    fs::remove(target);
    ::setenv("CALIBRATE_TARGET", target.string().c_str(), 1);
    CommandResult r = run({"fio", "--output-format=json", "--output=" + output.string(), jobs.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);

    // The check jobs out, the rest to calibrate.
    std::ifstream in(output);
    Json doc = Json::parse(in);
    Json checks = Json::array();
    Json calibrated = Json::array();
    for (Json& job : doc.at("jobs"))
        (job.at("jobname").get<std::string>().starts_with(kCheck) ? checks : calibrated).push_back(job);
    doc["jobs"] = calibrated;
    std::ofstream(calibration) << doc.dump();
    r = run_cli({"calibrate", calibration.string(), "-o", model.string()});
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("fio jobs: " + std::to_string(kJobs * kRounds) + ", used " +
                                      std::to_string(kJobs * kRounds)));
    Attempt attempt;
    attempt.calibration_report = r.out;

    r = run_cli({"estimate", target.string(), "--workload", kCheckWorkload, "--device-model", model.string(),
                 "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json before = Json::parse(r.out).at("volumes").at(0).at("before");
    for (const Json& check : checks) {
        CHECK(before.at("ios") ==
              check.at("read").at("total_ios").get<int>() + check.at("write").at("total_ios").get<int>());
        attempt.measured += measured_seconds(check);
    }
    REQUIRE(checks.size() == kJobs * kRounds - kFresh + 1);
    attempt.estimated =
        before.at("device_seconds").at("array").get<double>() * static_cast<double>(checks.size());
    for (const fs::path& p : {target, jobs, output, calibration, model}) fs::remove(p);
    return attempt;
}

bool within_20_percent(const Attempt& a) {
    return a.estimated >= 0.8 * a.measured && a.estimated <= 1.2 * a.measured;
}

}  // namespace

// A shared host's disk can change its behaviour for a whole minute (a neighbour's burst, a
// cache tier filling): calibrate then warns that its fit is bad, and the check misses with
// it (1.29 once, with reads fitting at 29 % RMS). Such a minute says nothing about the
// model, so the measurement is made again, up to three times; a model that is wrong misses
// every time.
TEST_CASE("calibrate: a model fitted to fio's jobs predicts another fio job within 20 %",
          "[estimate][calibrate][fio]") {
    require_tools({"fio"});
    constexpr int kAttempts = 3;
    const fs::path dir = scratch_dir();
    std::ostringstream history;
    Attempt last;
    for (int i = 0; i < kAttempts; ++i) {
        last = calibrate_and_check(dir, std::to_string(::getpid()) + "-" + std::to_string(i));
        history << "attempt " << i + 1 << ": fio measured " << last.measured
                << " s in the check jobs, estimated " << last.estimated << " s ("
                << last.estimated / last.measured << ")\n";
        if (within_20_percent(last)) break;
        history << last.calibration_report;
    }
    INFO(history.str());
    CHECK(within_20_percent(last));
}
