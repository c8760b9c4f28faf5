// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>

namespace guestfrag {

/// Which deflate container a compressed grain or cluster uses.
enum class DeflateWrapper {
    Raw,   ///< bare deflate (qcow2 clusters)
    Zlib,  ///< zlib header and checksum (VMDK grains)
};

/// What one zlib inflate(Z_FINISH) call over a whole buffer did.
struct InflateOutcome {
    int zlib_code = 0;         ///< zlib's return code (Z_STREAM_END, Z_BUF_ERROR, ...)
    std::size_t produced = 0;  ///< bytes written to the output
};

/// Inflates `in` into `out` in one call. The formats decide which outcomes they accept.
/// nullopt when a buffer is larger than zlib's 32-bit counters or the stream cannot start.
[[nodiscard]] std::optional<InflateOutcome> inflate_buffer(std::span<const std::byte> in, std::span<std::byte> out,
                                                           DeflateWrapper wrapper);

/// Runs job(0) … job(count − 1) on up to `max_threads` threads, never more than the host
/// has cores, the calling thread being one of them, and returns when all have run.
/// Readers inflate the compressed clusters or grains one read() spans this way: zlib
/// inflates at a few hundred MB/s per core, and qemu spreads them over a thread pool too.
/// Once a job throws, jobs not yet started are skipped and the first exception is
/// rethrown here. Jobs must be independent and safe to run concurrently.
void run_inflate_jobs_in_parallel(std::size_t count, std::size_t max_threads,
                                  const std::function<void(std::size_t)>& job);

}  // namespace guestfrag
