// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag schedule`: spread a plan's moves over maintenance windows under rate and IOPS
// limits (docs/schedule.md).
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/cli/apply_run.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/schedule_output.hpp"
#include "app/cli/size_option.hpp"
#include "app/cli/stop_on_signal.hpp"
#include "core/error.hpp"
#include "core/io/rate_limiter.hpp"
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
    std::optional<std::string> apply;  ///< IMAGE to carry the schedule out on
    std::string output;
    std::string output_format = "raw";
    ImageOptions image_options;
    bool no_verify = false;
    bool allow_vss = false;
};

/// Sleeps until `at`; a stop request ends the wait with Error(Cancelled).
void sleep_until(Instant at, const std::stop_token& stop) {
    std::mutex mutex;
    std::condition_variable_any woken;
    std::unique_lock lock(mutex);
    woken.wait_until(lock, stop, at, [] { return false; });
    if (stop.stop_requested()) throw Error(ErrorKind::Cancelled, "interrupted");
}

/// Waits, saying so on stderr, until move `move` of `schedule` may start (move_may_start).
void wait_for_move(const Schedule& schedule, const ScheduleOptions& options, std::size_t move,
                   const std::stop_token& stop) {
    const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    const Instant at = move_may_start(schedule, options, move, now);
    if (at <= now) return;
    std::cerr << "schedule: move " << move << " waits until " << iso_local(at) << '\n';
    sleep_until(at, stop);
}

/// Carries `schedule` out on a copy of the image (docs/schedule.md §7): apply_to_copy with
/// every copied byte under --rate, each move started only when move_may_start says.
ApplyResult carry_out(const Options& opts, Plan plan, const Schedule& schedule, const ScheduleOptions& options) {
    // An output that can never be written is refused now, not when the first window opens.
    on_behalf_of(*opts.apply, [&] { check_output_path(opts.output); });
    if (!schedule.batches.empty()) {
        // Nothing is read or written before the first batch may start: the analysis and a raw
        // output's disk copy are I/O on the datastore too.
        const StopOnSignal interrupt;
        try {
            wait_for_move(schedule, options, 0, interrupt.token());
        } catch (const Error&) {
            throw Failure(*opts.apply, "interrupted: no output was written", kInterrupted);
        }
    }
    ApplyOptions apply;
    apply.output = opts.output;
    apply.format = output_format(opts.output_format);
    apply.verify = !opts.no_verify;
    apply.allow_vss = opts.allow_vss;
    RateLimiter limiter(options.rate);
    apply.limiter = &limiter;
    apply.before_move = [&](std::size_t move, const std::stop_token& stop) {
        wait_for_move(schedule, options, move, stop);
    };
    return run_apply(*opts.apply, opts.image_options, std::move(plan), apply);
}

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

    Plan plan;
    Schedule schedule;
    on_behalf_of(opts.plan, [&] {
        plan = read_plan(opts.plan);
        source.allocation_digest = plan.identity.allocation_digest;
        schedule = make_schedule(plan, options);
    });
    if (opts.apply) {
        if (!opts.json) {
            print_schedule(std::cout, schedule, source);
            std::cout << std::flush;
        }
        const ApplyResult result = carry_out(opts, std::move(plan), schedule, options);
        if (opts.json) {
            // One document: the schedule's, with what carrying it out did.
            auto doc = nlohmann::ordered_json::parse(schedule_to_json(schedule, source));
            doc["apply"] = apply_json(result);
            std::cout << doc.dump(2) << '\n';
        } else {
            std::cout << '\n';
            print_apply(std::cout, result);
        }
    } else {
        if (opts.json) {
            std::cout << schedule_to_json(schedule, source);
        } else if (opts.ics) {
            const Instant stamp = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
            std::cout << schedule_to_ics(schedule, source, stamp);
        } else {
            print_schedule(std::cout, schedule, source);
        }
    }
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
    CLI::Option* apply = cmd->add_option(
        "--apply", opts->apply,
        "Carry the schedule out: apply the plan to a copy of IMAGE, each move in its window, under --rate");
    apply->type_name("IMAGE")->excludes(ics);
    cmd->add_option("-o,--output", opts->output, "With --apply: the new disk to write (replaced only when verified)")
        ->needs(apply);
    apply->needs("--output");
    add_output_format_option(*cmd, opts->output_format);
    add_image_options(*cmd, opts->image_options);
    cmd->add_flag("--no-verify", opts->no_verify, "With --apply: skip the checks after the moves")->needs(apply);
    cmd->add_flag("--allow-vss", opts->allow_vss,
                  "With --apply: apply even though shadow copies exist (an offline move bypasses their "
                  "copy-on-write)")
        ->needs(apply);
    cmd->callback([opts] { run(*opts); });
}

}  // namespace guestfrag::cli
