// SPDX-License-Identifier: GPL-2.0-or-later
// The benchmarks' memory figure: this process's peak resident set so far.
#pragma once

#include <sys/resource.h>

namespace guestfrag::bench {

/// Peak RSS in KiB (getrusage's ru_maxrss): it only grows, so measure one thing per process
/// or subtract what came before.
inline long peak_rss_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

}  // namespace guestfrag::bench
