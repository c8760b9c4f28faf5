// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/qcow2_inflate.hpp"

#include <zlib.h>

#include "core/image/inflate.hpp"

namespace guestfrag {

bool qcow2_inflate(std::span<const std::byte> in, std::span<std::byte> out) {
    const auto r = inflate_buffer(in, out, DeflateWrapper::Raw);
    if (!r) return false;
    // The cluster must come out whole. The input is only known to the sector, so a stream
    // that fills the cluster without reaching its end marker within `in` is fine as well.
    const int rc = r->zlib_code;
    return (rc == Z_STREAM_END || rc == Z_BUF_ERROR || rc == Z_OK) && r->produced == out.size();
}

}  // namespace guestfrag
