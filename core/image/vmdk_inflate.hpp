// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace guestfrag {

/// Inflates one compressed VMDK grain: a zlib stream (RFC 1950: deflate with the zlib
/// header and Adler-32 trailer), as VMware and qemu write with compressAlgorithm 1.
/// Bytes after the end of the stream (sector padding) are ignored. Returns how many bytes
/// came out, or nullopt when `in` does not hold one complete valid stream or the stream
/// inflates to more than out.size() bytes. Thread-safe; allocates only zlib's window.
[[nodiscard]] std::optional<std::size_t> vmdk_inflate(std::span<const std::byte> in, std::span<std::byte> out);

}  // namespace guestfrag
