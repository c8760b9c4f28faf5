// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag schedule`: spread a plan's moves over maintenance windows under rate and IOPS
// limits (docs/schedule.md).
#include <chrono>
#include <iostream>
#include <memory>

#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/schedule_output.hpp"
#include "app/cli/size_option.hpp"
#include "core/plan/plan_io.hpp"
#include "core/schedule/schedule.hpp"
#include "core/schedule/window.hpp"

namespace guestfrag::cli {

namespace {

struct Options {
    std::string plan;
    std::string rate;
    std::uint64_t iops = 0;
    std::vector<std::string> windows;
    std::string start;
    std::string max_per_window;
    bool json = false;
    bool ics = false;
};

template <typename T>
CLI::Validator parsed_check(Parsed<T> (*parse)(std::string_view), const std::string& name) {
    return CLI::Validator([parse](const std::string& text) { return parse(text).error; }, name);
}

/// Now, rounded up to the next whole minute.
Instant next_minute() {
    const auto now = std::chrono::system_clock::now();
    return std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::ceil<std::chrono::minutes>(now));
}

void run(const Options& opts) {
    if (opts.rate.empty() && opts.iops == 0)
        throw Failure("schedule", "needs --rate or --iops (or both) to know how long moves take", kUsage);
    const std::optional<std::uint64_t> cap = size_option(opts.max_per_window);
    if (cap && *cap == 0) throw Failure("schedule", "--max-per-window must be more than 0", kUsage);
    if (cap && opts.windows.empty()) {
        throw Failure(
            "schedule",
            "--max-per-window needs --window: without windows all the time from the start is one window",
            kUsage);
    }

    ScheduleSource source;
    source.plan_path = opts.plan;
    ScheduleOptions& options = source.options;
    options.rate = rate_option(opts.rate);
    options.iops = opts.iops;
    options.max_per_window = cap.value_or(0);
    for (const std::string& text : opts.windows) options.windows.push_back(*parse_window(text).value);
    options.start = opts.start.empty() ? next_minute() : *parse_instant(opts.start).value;

    on_behalf_of(opts.plan, [&] {
        const Plan plan = read_plan(opts.plan);
        source.allocation_digest = plan.identity.allocation_digest;
        const Schedule schedule = make_schedule(plan, options);
        if (opts.json) {
            std::cout << schedule_to_json(schedule, source);
        } else if (opts.ics) {
            const Instant stamp = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
            std::cout << schedule_to_ics(schedule, source, stamp);
        } else {
            print_schedule(std::cout, schedule, source);
        }
    });
    std::cout.flush();
    if (!std::cout) throw Failure("schedule", "cannot write the output", kBadInput);
}

}  // namespace

void add_schedule_command(CLI::App& app) {
    auto opts = std::make_shared<Options>();
    CLI::App* cmd = app.add_subcommand(
        "schedule",
        "Split a plan into batches that run inside maintenance windows under rate and IOPS limits");
    cmd->add_option("PLAN", opts->plan, "Plan file (guestfrag.plan.v1, from guestfrag plan -o)")->required();
    cmd->add_option("--rate", opts->rate, "Most data moved per second, e.g. 20MiB/s")->check(rate_check());
    cmd->add_option("--iops", opts->iops,
                    "Most IOs per second (a move reads and writes its data in IOs of 1 MiB)")
        ->check(CLI::Validator(
            [](const std::string& text) {
                const bool digits = !text.empty() && text.size() <= 18 &&
                                    text.find_first_not_of("0123456789") == std::string::npos;
                return digits && std::stoull(text) > 0
                           ? std::string()
                           : "'" + text + "' is not a positive whole number of IOs per second";
            },
            "N"));
    cmd->add_option("--window", opts->windows,
                    "When moves may run, local time, e.g. \"Mon-Fri 22:00-06:00\", \"Sat,Sun 00:00-24:00\", "
                    "\"daily 01:00-05:00\" (repeatable: the union; default: always)")
        ->allow_extra_args(false)  // one window per --window, so PLAN may follow
        ->check(parsed_check(&parse_window, "WINDOW"));
    cmd->add_option(
           "--start", opts->start,
           "Nothing runs before this local time, e.g. 2026-11-23T22:00 (default: now, rounded up to the "
           "minute)")
        ->check(parsed_check(&parse_instant, "TIME"));
    cmd->add_option("--max-per-window", opts->max_per_window, "Most data moved in one window occurrence")
        ->check(size_check());
    CLI::Option* json = cmd->add_flag("--json", opts->json, "Print the guestfrag.schedule.v1 JSON document");
    CLI::Option* ics =
        cmd->add_flag("--ics", opts->ics, "Print an iCalendar (RFC 5545) file with one event per batch");
    json->excludes(ics);
    cmd->callback([opts] { run(*opts); });
}

}  // namespace guestfrag::cli
