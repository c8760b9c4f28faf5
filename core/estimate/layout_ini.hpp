// SPDX-License-Identifier: GPL-2.0-or-later
// Path lists a trace workload reads: Windows' Prefetch\Layout.ini and plain text lists,
// and the one rule that turns a Windows path of any spelling into a volume path.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace guestfrag {

/// The volume path ("\\WINDOWS\\SYSTEM32\\NTDLL.DLL") of a path as traces spell it:
/// '/' becomes '\\'; the prefixes "\\\\?\\", "\\??\\", a drive "C:", an NT device
/// "\\DEVICE\\HARDDISKVOLUME1" (any single \\DEVICE\\ component) and a volume
/// "\\VOLUME{guid}" are dropped; a missing leading '\\' is added; a trailing one removed
/// (except for the root). Case is kept. "" for a blank path. Pure, no I/O.
[[nodiscard]] std::string to_volume_path(std::string_view windows_path);

/// The volume paths listed by `content`, in order: a Layout.ini as Windows' prefetcher
/// writes it (UTF-16LE with a byte-order mark, "[OptimalLayoutFile]" / "Version=1" then
/// one "C:\\..." path per line) or a text list with one path per line (UTF-8, optional
/// BOM; UTF-16BE with BOM too). Blank lines, ';' and '#' comments, "[section]" lines and
/// "key=value" settings are skipped; CR LF and LF endings both work. Each path goes
/// through to_volume_path(). `name` only labels errors. Throws Error(Unsupported) when
/// the content is not text (NUL bytes, invalid UTF-8 or UTF-16). Cost: linear.
[[nodiscard]] std::vector<std::string> parse_path_list(std::span<const std::byte> content,
                                                       const std::string& name);

}  // namespace guestfrag
