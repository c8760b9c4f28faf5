// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_inflate.hpp"

#define ZLIB_CONST
#include <zlib.h>

#include <limits>

namespace guestfrag {
namespace {

/// Owns an initialised zlib inflate stream.
class ZlibInflater {
public:
    ZlibInflater() { ok_ = inflateInit(&stream_) == Z_OK; }
    ~ZlibInflater() {
        if (ok_) inflateEnd(&stream_);
    }
    ZlibInflater(const ZlibInflater&) = delete;
    ZlibInflater& operator=(const ZlibInflater&) = delete;

    [[nodiscard]] bool ok() const { return ok_; }
    z_stream& stream() { return stream_; }

private:
    z_stream stream_{};
    bool ok_ = false;
};

}  // namespace

std::optional<std::size_t> vmdk_inflate(std::span<const std::byte> in, std::span<std::byte> out) {
    constexpr std::size_t max_chunk = std::numeric_limits<uInt>::max();
    if (in.size() > max_chunk || out.size() > max_chunk) return std::nullopt;
    ZlibInflater inflater;
    if (!inflater.ok()) return std::nullopt;
    z_stream& s = inflater.stream();
    s.next_in = reinterpret_cast<const Bytef*>(in.data());
    s.avail_in = static_cast<uInt>(in.size());
    s.next_out = reinterpret_cast<Bytef*>(out.data());
    s.avail_out = static_cast<uInt>(out.size());
    // Z_STREAM_END only: a truncated stream, bad data or one that does not fit in `out`
    // (Z_BUF_ERROR with the output full) are all refused.
    if (inflate(&s, Z_FINISH) != Z_STREAM_END) return std::nullopt;
    return out.size() - s.avail_out;
}

}  // namespace guestfrag
