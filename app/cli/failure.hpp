// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace guestfrag::cli {

/// Exit statuses of the CLI (docs/design.md §6, contract).
enum ExitStatus : int {
    kOk = 0,
    kUsage = 1,
    kBadInput = 2,
    kInternal = 3,
    kUnfinished = 4,
    kPlanWorthRunning = 5,  ///< analyze --check: a plan is worth running and can run offline now
    kPlanBlocked = 6,       ///< analyze --check: a plan is worth running, but an offline run is blocked
    kInterrupted = 130,
};

/// Ends a command that did its work with a status that reports what it found (analyze
/// --check), not a failure: main returns `status` and prints nothing more.
struct Finding {
    int status = kOk;
};

/// A failure that ends the command: printed by main as "guestfrag: error: SUBJECT: reason".
class Failure : public std::runtime_error {
public:
    Failure(std::string subject, const std::string& reason, int status)
        : std::runtime_error(reason), subject_(std::move(subject)), status_(status) {}
    [[nodiscard]] const std::string& subject() const noexcept { return subject_; }
    [[nodiscard]] int status() const noexcept { return status_; }

private:
    std::string subject_;
    int status_;
};

/// Runs `work` on behalf of `subject` (an image or plan path), turning core errors and
/// std::bad_alloc into a Failure that names the subject.
void on_behalf_of(const std::string& subject, const std::function<void()>& work);

}  // namespace guestfrag::cli
