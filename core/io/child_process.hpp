// SPDX-License-Identifier: GPL-2.0-or-later
// Running another program to its end: mkntfs for mkimage, qemu-img for compact's container
// outputs. No shell is involved, so no argument is ever interpreted.
#pragma once

#include <stop_token>
#include <string>
#include <vector>

namespace guestfrag {

/// The executable `name` as the system would find it: in PATH, then in the sbin and bin
/// directories (an ordinary user's PATH often lacks sbin, where mkntfs lives). Throws
/// Error(Unsupported, "NAME not found (install PACKAGE)") when there is none.
[[nodiscard]] std::string find_program(const std::string& name, const std::string& package);

/// Runs `argv` (argv[0] a path, e.g. find_program's) with standard input from /dev/null,
/// standard output and error captured together, and LC_ALL=C (its messages are quoted in
/// errors, so they stay in English); returns what it printed. A stop request on `stop`
/// ends it (SIGTERM, then waited for) and throws Error(Cancelled). Throws Error(Io, "NAME
/// failed: LAST LINE") when it exits non-zero or dies of a signal, and Error(Io) when it
/// cannot be started. Memory: what it prints.
std::string run_program(const std::vector<std::string>& argv, const std::stop_token& stop = {});

}  // namespace guestfrag
