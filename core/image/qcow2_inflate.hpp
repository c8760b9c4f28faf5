// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <span>

namespace guestfrag {

/// Inflates one compressed qcow2 cluster: a raw deflate stream (no zlib header), as qemu
/// writes with the default zlib compression type. `in` may carry trailing bytes (the
/// descriptor counts whole sectors). Returns true when exactly out.size() bytes came out,
/// false for data that is not a valid stream or decompresses to a different size.
/// Thread-safe (no shared state); allocates only zlib's window.
[[nodiscard]] bool qcow2_inflate(std::span<const std::byte> in, std::span<std::byte> out);

}  // namespace guestfrag
