// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace guestfrag::batch {

/// The process that owns a batch run, recorded in its `runs` row so that a later run can tell
/// a run that is still going from one whose process was killed (SIGKILL, a crash, a reboot)
/// and so never marked itself finished or interrupted.
struct RunOwner {
    std::string host;     ///< gethostname()
    std::string boot_id;  ///< /proc/sys/kernel/random/boot_id: process ids restart at each boot
    std::int64_t pid = 0;
    /// The process's start time in clock ticks since boot (/proc/PID/stat field 22): a pid
    /// reused by another process has another start time.
    std::int64_t start_ticks = 0;
};

/// This process.
[[nodiscard]] RunOwner this_process();

/// Whether `owner` may still be running: false only when it is certainly gone (same host and
/// boot, and no process with its pid and start time; or same host and another boot). An owner
/// on another host cannot be checked and counts as alive.
[[nodiscard]] bool may_be_alive(const RunOwner& owner);

}  // namespace guestfrag::batch
