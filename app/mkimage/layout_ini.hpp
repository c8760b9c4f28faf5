// SPDX-License-Identifier: GPL-2.0-or-later
// The boot trace a generated volume can carry: \Windows\Prefetch\Layout.ini as Windows'
// prefetcher writes it, for `estimate --workload trace:@layout` (whose reader is
// core/estimate/layout_ini; mkimage does not link it). Not the disk layout (layout.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace guestfrag::mkimage {

/// Where Windows keeps the list: directories from the root, then the file's name.
inline constexpr std::array<std::string_view, 2> kLayoutIniDirs{"Windows", "Prefetch"};
inline constexpr std::string_view kLayoutIniName = "Layout.ini";

/// `count` distinct indices of [0, candidates) in the order drawn, which is the boot order:
/// a partial Fisher-Yates shuffle on RandomStream::LayoutIni of `seed`, so the population's
/// own draws are untouched. Requires count <= candidates. Cost: O(candidates).
[[nodiscard]] std::vector<std::size_t> draw_boot_order(std::size_t candidates, std::size_t count,
                                                       std::uint32_t seed);

/// UTF-8 `text` as UTF-16LE code units, characters above U+FFFF as surrogate pairs. Throws
/// Error(Internal) on invalid UTF-8 (overlong forms, surrogates, truncated sequences): the
/// generator only encodes names it made itself.
[[nodiscard]] std::vector<unsigned char> to_utf16le(std::string_view text);

/// The bytes of a Layout.ini listing `paths` (UTF-8, "C:\\dir\\file.ext") in order: the
/// byte-order mark FF FE, then "[OptimalLayoutFile]", "Version=1" and one path per line,
/// each line ended by CR LF, all in UTF-16LE. Throws as to_utf16le.
[[nodiscard]] std::vector<unsigned char> layout_ini_bytes(const std::vector<std::string>& paths);

}  // namespace guestfrag::mkimage
