// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/mkimage/layout_ini.hpp"

#include <array>
#include <numeric>
#include <utility>

#include "app/mkimage/seeded_random.hpp"
#include "core/error.hpp"

namespace guestfrag::mkimage {

namespace {

[[noreturn]] void bad_utf8(std::size_t at) {
    throw Error(ErrorKind::Internal, "a generated path is not UTF-8 (byte " + std::to_string(at) + ")");
}

// The smallest code point a sequence of each length may carry: shorter would do for less,
// and such overlong forms are not UTF-8.
constexpr std::array<std::uint32_t, 5> kLeast{0, 0, 0x80, 0x800, 0x10000};

void put_unit(std::vector<unsigned char>& out, std::uint32_t unit) {
    out.push_back(static_cast<unsigned char>(unit & 0xFF));
    out.push_back(static_cast<unsigned char>(unit >> 8));
}

void append_utf16le(std::vector<unsigned char>& out, std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const auto lead = static_cast<unsigned char>(text[i]);
        // C0 and C1 would only start overlong forms, F5..FF code points above U+10FFFF; 80..BF
        // continue a sequence and cannot start one.
        const std::size_t length = lead < 0x80   ? 1
                                   : lead < 0xC2 ? 0
                                   : lead < 0xE0 ? 2
                                   : lead < 0xF0 ? 3
                                   : lead < 0xF5 ? 4
                                                 : 0;
        if (length == 0) bad_utf8(i);
        std::uint32_t point = lead & (0x7Fu >> (length == 1 ? 0 : length));  // the lead's payload bits
        if (i + length > text.size()) bad_utf8(i);
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xC0) != 0x80) bad_utf8(i + k);
            point = point << 6 | (next & 0x3F);
        }
        if (point < kLeast[length] || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) bad_utf8(i);
        if (point >= 0x10000) {
            put_unit(out, 0xD800 + ((point - 0x10000) >> 10));
            put_unit(out, 0xDC00 + ((point - 0x10000) & 0x3FF));
        } else {
            put_unit(out, point);
        }
        i += length;
    }
}

}  // namespace

std::vector<std::size_t> draw_boot_order(std::size_t candidates, std::size_t count, std::uint32_t seed) {
    if (count > candidates)
        throw Error(ErrorKind::Internal,
                    "boot order of " + std::to_string(count) + " files out of " + std::to_string(candidates));
    SeededRandom rng(seed, RandomStream::LayoutIni);
    std::vector<std::size_t> order(candidates);
    std::iota(order.begin(), order.end(), std::size_t{0});
    for (std::size_t k = 0; k < count; ++k) std::swap(order[k], order[k + rng.below(candidates - k)]);
    order.resize(count);
    return order;
}

std::vector<unsigned char> to_utf16le(std::string_view text) {
    std::vector<unsigned char> out;
    out.reserve(text.size() * 2);
    append_utf16le(out, text);
    return out;
}

std::vector<unsigned char> layout_ini_bytes(const std::vector<std::string>& paths) {
    std::vector<unsigned char> out{0xFF, 0xFE};
    for (const std::string_view header : {"[OptimalLayoutFile]\r\n", "Version=1\r\n"})
        append_utf16le(out, header);
    for (const std::string& path : paths) {
        append_utf16le(out, path);
        append_utf16le(out, "\r\n");
    }
    return out;
}

}  // namespace guestfrag::mkimage
