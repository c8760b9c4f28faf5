// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
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

}  // namespace guestfrag
