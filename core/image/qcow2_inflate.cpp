// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/qcow2_inflate.hpp"

#define ZLIB_CONST
#include <zlib.h>

#include <limits>

namespace guestfrag {
namespace {

/// Owns an initialised inflate stream.
class Inflater {
public:
    Inflater() {
        // Negative window bits: raw deflate. qemu compresses with a 4 KiB window (-12); the
        // largest window (-15) inflates those streams too, and any other valid one.
        ok_ = inflateInit2(&stream_, -15) == Z_OK;
    }
    ~Inflater() {
        if (ok_) inflateEnd(&stream_);
    }
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;

    [[nodiscard]] bool ok() const { return ok_; }
    z_stream& stream() { return stream_; }

private:
    z_stream stream_{};
    bool ok_ = false;
};

}  // namespace

bool qcow2_inflate(std::span<const std::byte> in, std::span<std::byte> out) {
    constexpr std::size_t max_chunk = std::numeric_limits<uInt>::max();
    if (in.size() > max_chunk || out.size() > max_chunk) return false;
    Inflater inflater;
    if (!inflater.ok()) return false;
    z_stream& s = inflater.stream();
    s.next_in = reinterpret_cast<const Bytef*>(in.data());
    s.avail_in = static_cast<uInt>(in.size());
    s.next_out = reinterpret_cast<Bytef*>(out.data());
    s.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&s, Z_FINISH);
    // The cluster must come out whole. The input is only known to the sector, so a stream
    // that fills the cluster without reaching its end marker within `in` is fine as well.
    return (rc == Z_STREAM_END || rc == Z_BUF_ERROR || rc == Z_OK) && s.avail_out == 0;
}

}  // namespace guestfrag
