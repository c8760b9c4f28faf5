// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag schedule`: spread a plan's moves over maintenance windows under rate and IOPS
// limits (docs/schedule.md); or run a compaction inside the windows (`--compact`, §9).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/cli/apply_run.hpp"
#include "app/cli/commands.hpp"
#include "app/cli/compact_run.hpp"
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

using Json = nlohmann::ordered_json;

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
    std::optional<std::string> compact;  ///< IMAGE to compact inside the windows
    std::string output;
    NewDiskOptions disk;
    ImageOptions image_options;
};

/// Sleeps until `at` or until `stop` is requested, whichever comes first.
void wait_until(Instant at, const std::stop_token& stop) {
    std::mutex mutex;
    std::condition_variable_any woken;
    std::unique_lock lock(mutex);
    // In slices of at most an hour, measured in seconds: a wait until `at` itself would
    // count it in nanoseconds since 1970, which overflows after 2262 (a --start years ahead).
    while (!stop.stop_requested()) {
        const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
        if (now >= at) return;
        const std::chrono::seconds left = std::min<std::chrono::seconds>(at - now, std::chrono::hours(1));
        woken.wait_for(lock, stop, left, [] { return false; });
    }
}

/// Sleeps until `at`; a stop request ends the wait with Error(Cancelled).
void sleep_until(Instant at, const std::stop_token& stop) {
    wait_until(at, stop);
    if (stop.stop_requested()) throw Error(ErrorKind::Cancelled, "interrupted");
}

/// Holds work outside the maintenance windows (docs/schedule.md §9): called before every
/// byte a compaction copies or moves (the rate limiter's gate) and as each of its steps
/// begins, it returns at once inside an occurrence of the windows (at or after --start) and
/// otherwise sleeps, saying so on stderr, until the next occurrence opens. Thread-safe.
class WindowGate {
public:
    WindowGate(std::vector<Window> windows, Instant start) : windows_(std::move(windows)), start_(start) {}

    void operator()(const std::stop_token& stop) {
        const std::lock_guard lock(mutex_);
        const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
        if (now >= start_ && now < open_until_) return;  // the occurrence found last is still open
        const Instant from = std::max(now, start_);
        const std::optional<Interval> occurrence = windows_.next(from, from);
        if (!occurrence)
            throw Error(ErrorKind::Unsupported, "no window opens in the 16 days after " + iso_local(from));
        if (occurrence->start > now) {
            std::cerr << "schedule: compaction waits until " << iso_local(occurrence->start) << '\n';
            waits_.push_back({now, occurrence->start});
            wait_until(occurrence->start, stop);
        }
        open_until_ = occurrence->end;
    }

    /// Every wait so far: from when, until when.
    [[nodiscard]] std::vector<Interval> waits() const {
        const std::lock_guard lock(mutex_);
        return waits_;
    }

private:
    WindowSet windows_;
    Instant start_;
    Instant open_until_{};
    std::vector<Interval> waits_;
    mutable std::mutex mutex_;
};

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
    apply.format = output_format(opts.disk.output_format);
    apply.verify = !opts.disk.no_verify;
    apply.allow_vss = opts.disk.allow_vss;
    RateLimiter limiter(options.rate);
    apply.limiter = &limiter;
    apply.before_move = [&](std::size_t move, const std::stop_token& stop) {
        wait_for_move(schedule, options, move, stop);
    };
    PendingPlan read(std::move(plan));
    return run_apply(*opts.apply, opts.image_options, read, apply);
}

/// Compacts `--compact IMAGE` into `-o OUT` inside the windows, every byte copied or moved
/// under --rate (docs/schedule.md §9), and prints what it did.
void compact_in_windows(const Options& opts, const ScheduleOptions& schedule) {
    CompactOptions options;
    on_behalf_of(*opts.compact, [&] {
        options = compact_options(opts.output, opts.disk);
        check_output_path(opts.output, false);
    });
    WindowGate gate(schedule.windows, schedule.start);
    RateLimiter limiter(schedule.rate);
    limiter.set_gate([&gate](const std::stop_token& stop) { gate(stop); });
    options.limiter = &limiter;
    {
        // Nothing is read before a window opens: the analysis is I/O on the datastore too.
        const StopOnSignal interrupt;
        gate(interrupt.token());
        if (interrupt.token().stop_requested())
            throw Failure(*opts.compact, "interrupted: no output was written", kInterrupted);
    }
    const CompactResult result = run_compact(*opts.compact, opts.image_options, options,
                                             [&gate](CompactOptions& o, const std::stop_token& stop) {
                                                 // Each step (the hashing of the proofs, qemu-img's
                                                 // conversion) begins inside a window.
                                                 o.on_step = [&gate, stop](CompactStep) { gate(stop); };
                                             });
    if (opts.json) {
        Json doc = compact_json(result);
        Json windows = Json::array();
        for (const Window& w : schedule.windows) windows.push_back(w.text);
        Json waits = Json::array();
        for (const Interval& w : gate.waits())
            waits.push_back({{"from", iso_local(w.start)}, {"until", iso_local(w.end)}});
        doc["schedule"] = {{"start", iso_local(schedule.start)},
                           {"windows", std::move(windows)},
                           {"rate_bytes_per_second", schedule.rate},
                           {"waits", std::move(waits)}};
        std::cout << doc.dump(2) << '\n';
    } else {
        print_compact(std::cout, *opts.compact, result);
    }
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
    if (opts.plan.empty() == !opts.compact)
        throw Failure(
            "schedule",
            opts.compact ? "takes a PLAN or --compact IMAGE, not both" : "needs a PLAN (or --compact IMAGE)",
            kUsage);
    check_new_disk_options(opts.disk, opts.apply.has_value(), opts.compact.has_value());
    if (opts.compact && opts.rate.empty())
        throw Failure(
            "schedule",
            "--compact needs --rate: a compaction's work is bytes, not a list of moves known before it runs",
            kUsage);
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

    if (opts.compact) {
        compact_in_windows(opts, options);
        return;
    }

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
    cmd->add_option("PLAN", opts->plan, "Plan file (guestfrag.plan.v1, from guestfrag plan -o)");
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
    CLI::Option* compact = cmd->add_option(
        "--compact", opts->compact,
        "Compact IMAGE into -o OUT instead (as guestfrag compact), only inside the windows, under --rate");
    compact->type_name("IMAGE")->excludes(ics)->excludes(apply)->excludes("--iops")->excludes(
        "--max-per-window");
    cmd->add_option("-o,--output", opts->output,
                    "With --apply: the new disk to write (replaced only when verified); with --compact: the "
                    "new image (an existing file is refused)");
    apply->needs("--output");
    compact->needs("--output");
    add_new_disk_options(*cmd, opts->disk, apply, compact);
    add_image_options(*cmd, opts->image_options);
    cmd->footer(
        "Example:\n  guestfrag schedule plan.json --rate 20MiB/s --window \"Mon-Fri 22:00-06:00\" --ics > "
        "plan.ics\n");
    cmd->callback([opts] { run(*opts); });
}

}  // namespace guestfrag::cli
