// SPDX-License-Identifier: GPL-2.0-or-later
// Running the apply use case from a command (`apply`, `schedule --apply`) and printing what
// it did (docs/apply.md): written once for every command that applies.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/image_options.hpp"
#include "app/cli/progress_meter.hpp"
#include "core/plan/plan.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/step_info.hpp"

namespace guestfrag::cli {

/// The guestfrag.apply.v1 document of `result`.
[[nodiscard]] nlohmann::ordered_json apply_json(const ApplyResult& result);

/// The `verification` object of guestfrag.apply.v1 and guestfrag.compact.v1.
[[nodiscard]] nlohmann::ordered_json verification_json(const ApplyVerification& v);

/// Runs `work` (a use case that writes a new disk from `image`) with a progress meter named
/// `what` (which `work` tells the steps it begins), stopping cleanly on SIGINT or SIGTERM (Failure
/// "interrupted: no output was written", exit 130), then prints the `warnings` it filled (the input's layer
/// warnings) to stderr as analyze does. Errors are Failures on behalf of `image` (exit 2).
void run_writing(const std::string& image, const char* what, const std::vector<std::string>& warnings,
                 const std::function<void(const Progress&, ProgressMeter&)>& work);

/// An ApplyOptions or CompactOptions on_step that calls `given` (when set), then shows on
/// `meter` the step that begins as step n of about `steps` (apply_steps, compact_steps).
template <typename Step>
[[nodiscard]] std::function<void(Step)> announce_steps(ProgressMeter& meter, std::function<void(Step)> given,
                                                       std::size_t steps) {
    return [&meter, given = std::move(given), steps, number = std::size_t{0}](Step step) mutable {
        if (given) given(step);
        meter.step(++number, steps, step_info(step));
    };
}

/// The text summary: moves done and bytes, one line per skip reason, the verification.
void print_apply(std::ostream& out, const ApplyResult& result);

/// Adds --output-format raw|qcow2 to `cmd`, storing the text into `format` (which must
/// outlive the parse and holds the default).
void add_output_format_option(CLI::App& cmd, std::string& format);

/// The format a checked --output-format text names.
[[nodiscard]] ApplyOutputFormat output_format(const std::string& text);

/// Runs apply_to_copy on `image` (opened as `image_options` say) with a progress meter,
/// stopping cleanly on SIGINT or SIGTERM (Failure "interrupted: no output was written",
/// exit 130), then prints the input's layer warnings to stderr as analyze does. Errors are
/// Failures on behalf of `image` (exit 2).
[[nodiscard]] ApplyResult run_apply(const std::string& image, const ImageOptions& image_options,
                                    PendingPlan& plan, const ApplyOptions& options);

}  // namespace guestfrag::cli
