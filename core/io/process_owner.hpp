// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace guestfrag {

/// The process that owns some work left on disk (a batch run's `runs` row, apply's temporary
/// output), recorded so that a later process can tell work that is still going from work
/// whose process was killed (SIGKILL, a crash, a reboot) and so never cleaned up after itself.
struct ProcessOwner {
    std::string host;     ///< gethostname()
    std::string boot_id;  ///< /proc/sys/kernel/random/boot_id: process ids restart at each boot
    std::int64_t pid = 0;
    /// The process's start time in clock ticks since boot (/proc/PID/stat field 22): a pid
    /// reused by another process has another start time.
    std::int64_t start_ticks = 0;
};

/// This process.
[[nodiscard]] ProcessOwner this_process();

/// Whether `owner` may still be running: false only when it is certainly gone (same host and
/// boot, and no process with its pid and start time; or same host and another boot). An owner
/// on another host cannot be checked and counts as alive.
[[nodiscard]] bool may_be_alive(const ProcessOwner& owner);

}  // namespace guestfrag
