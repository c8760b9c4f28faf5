// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_inflate.hpp"

#include <zlib.h>

#include "core/image/inflate.hpp"

namespace guestfrag {

std::optional<std::size_t> vmdk_inflate(std::span<const std::byte> in, std::span<std::byte> out) {
    const auto r = inflate_buffer(in, out, DeflateWrapper::Zlib);
    // Z_STREAM_END only: a truncated stream, bad data or one that does not fit in `out`
    // (Z_BUF_ERROR with the output full) are all refused.
    if (!r || r->zlib_code != Z_STREAM_END) return std::nullopt;
    return r->produced;
}

}  // namespace guestfrag
