// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag calibrate FIO.json... -o model.json`: the array model fitted to fio's
// measurements of the user's own storage (docs/calibrate.md).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "app/cli/columns.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/size_option.hpp"
#include "core/error.hpp"
#include "core/estimate/fio_calibrate.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

struct Options {
    std::vector<std::string> inputs;
    std::string output;
    std::string block = "4KiB";
    bool json = false;
};

/// A QD1 latency: microseconds below a second's thousandth, else milliseconds.
std::string latency_text(double seconds) {
    return seconds < 1e-3 ? fixed(seconds * 1e6, 1) + " us" : fixed(seconds * 1e3, 3) + " ms";
}

std::string percent_text(double share) { return (share >= 0 ? "+" : "") + fixed(share * 100, 1) + " %"; }

double residual(const CalibrationSample& s) {
    return (s.fitted_seconds - s.measured_seconds) / s.measured_seconds;
}

void print_text(const FioCalibration& cal, const Calibration& fit, std::size_t used) {
    std::cout << "fio jobs: " << cal.jobs().size() << ", used " << used
              << "; the zeroing block: " << format_size(cal.block_bytes()) << "\n\n";
    std::cout << pad("job", 22) << pad("file", 16) << pad("dir", 6) << pad("IOs", 9, true)
              << pad("bs", 11, true) << pad("random", 8, true) << pad("first w/IO", 11, true)
              << pad("measured", 12, true) << pad("fitted", 12, true) << pad("residual", 10, true) << '\n';
    for (const CalibrationJob& job : cal.jobs()) {
        if (job.unusable) continue;
        for (const CalibrationSample& s : job.samples) {
            std::cout << pad(job.name, 22) << pad(job.file, 16) << pad(s.write ? "write" : "read", 6)
                      << pad(std::to_string(s.ios), 9, true) << pad(format_size(s.bs), 11, true)
                      << pad(s.write ? "" : fixed(s.random_share * 100, 0) + " %", 8, true)
                      << pad(s.write ? fixed(s.first_writes_per_io, 2) : "", 11, true)
                      << pad(latency_text(s.measured_seconds), 12, true)
                      << pad(latency_text(s.fitted_seconds), 12, true)
                      << pad(percent_text(residual(s)), 10, true) << '\n';
        }
    }
    bool heading = false;
    for (const CalibrationJob& job : cal.jobs()) {
        if (!job.unusable) continue;
        if (!heading) std::cout << "\nNot used:\n";
        heading = true;
        std::cout << "  " << job.source << ": " << job.name << ": " << *job.unusable << '\n';
    }
    const ArrayModel& a = fit.array;
    std::cout << "\nArray model (least squares of the relative residuals):\n"
              << "  random read            " << latency_text(a.random_io_seconds) << " + bytes / "
              << fixed(a.transfer_bytes_per_second / 1e6, 1) << " MB/s\n"
              << "  sequential read        " << latency_text(a.sequential_io_seconds) << " + bytes / "
              << fixed(a.transfer_bytes_per_second / 1e6, 1) << " MB/s\n"
              << "  write                  " << latency_text(a.write_io_seconds) << " + bytes / "
              << fixed(a.write_transfer_bytes_per_second / 1e6, 1) << " MB/s\n"
              << "  first write of a block " << latency_text(fit.first_write_seconds) << " (zeroing at "
              << fixed(a.first_write.zero_bytes_per_second / 1e6, 1) << " MB/s, allocating "
              << latency_text(a.first_write.allocate_seconds) << ")\n"
              << "  RMS residual           reads " << fixed(fit.read_rms_residual * 100, 1) << " %, writes "
              << fixed(fit.write_rms_residual * 100, 1) << " %\n";
    for (const std::string& warning : fit.warnings) std::cout << hanging("  warning: ", warning);
}

nlohmann::ordered_json report_json(const FioCalibration& cal, const Calibration& fit) {
    nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
    for (const CalibrationJob& job : cal.jobs()) {
        nlohmann::ordered_json j{
            {"source", job.source}, {"job", job.name}, {"file", job.file}, {"rw", job.rw}};
        if (job.unusable) {
            j["unusable"] = *job.unusable;
        } else {
            j["samples"] = nlohmann::ordered_json::array();
            for (const CalibrationSample& s : job.samples)
                j["samples"].push_back({{"direction", s.write ? "write" : "read"},
                                        {"ios", s.ios},
                                        {"bs", s.bs},
                                        {"random_share", s.random_share},
                                        {"first_writes_per_io", s.first_writes_per_io},
                                        {"measured_seconds", s.measured_seconds},
                                        {"fitted_seconds", s.fitted_seconds},
                                        {"residual", residual(s)}});
        }
        jobs.push_back(std::move(j));
    }
    return {{"format", "guestfrag.calibrate.v1"},
            {"block_bytes", cal.block_bytes()},
            {"jobs", std::move(jobs)},
            {"read_rms_residual", fit.read_rms_residual},
            {"write_rms_residual", fit.write_rms_residual},
            {"warnings", fit.warnings},
            {"first_write_seconds", fit.first_write_seconds},
            {"device_models", calibrated_model_json(fit.array)}};
}

void run(const Options& opts) {
    const std::uint64_t block = *size_option(opts.block);
    if (block == 0 || block % 512 != 0)
        throw Failure("--block", "the zeroing block must be a positive multiple of 512 bytes", kUsage);
    FioCalibration cal(block);
    for (const std::string& path : opts.inputs) on_behalf_of(path, [&] { cal.add_file(path); });
    std::size_t used = 0;
    for (const CalibrationJob& job : cal.jobs()) used += job.unusable ? 0 : 1;
    Calibration fit;
    try {
        fit = cal.fit();
    } catch (const Error& e) {
        // Which jobs were left out and why is what the user needs to repair the jobs; the
        // first of them fits the one line an error gets.
        std::string reason = e.what();
        const auto first = std::find_if(cal.jobs().begin(), cal.jobs().end(),
                                        [](const CalibrationJob& job) { return job.unusable.has_value(); });
        if (first != cal.jobs().end())
            reason += " (" + std::to_string(cal.jobs().size() - used) + " of " +
                      std::to_string(cal.jobs().size()) + " jobs not used; " + first->name + ": " +
                      *first->unusable + ")";
        throw Failure("calibrate", reason, kBadInput);
    }
    if (!opts.output.empty()) {
        std::ofstream out(opts.output, std::ios::binary | std::ios::trunc);
        out << calibrated_model_json(fit.array).dump(2) << '\n';
        out.close();
        if (!out) throw Failure(opts.output, "cannot write the device model", kBadInput);
    }
    if (opts.json) {
        std::cout << report_json(cal, fit).dump(2) << '\n';
        return;
    }
    print_text(cal, fit, used);
    if (!opts.output.empty()) std::cout << "\nWrote the device model to " << opts.output << '\n';
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "calibrate",
        "Fit the array device model to fio's measurements of your storage (fio --output-format=json)");
    cmd->add_option("FIO_JSON", opts->inputs, "fio JSON outputs, in the order their jobs ran")->required();
    cmd->add_option(
        "-o,--output", opts->output,
        "Write the fitted model to this file (for --device-model of estimate, impact, report, the GUI)");
    cmd->add_option(
           "--block", opts->block,
           "Zeroing block of the storage fio ran on: its first writes are counted per block (default 4KiB)")
        ->check(size_check());
    cmd->add_flag("--json", opts->json, "Print the fit as JSON (guestfrag.calibrate.v1)");
    cmd->footer("Example:\n  guestfrag calibrate cal.json -o model.json --block 1MiB\n");
    cmd->callback([opts] { run(*opts); });
}

}  // namespace guestfrag::cli
