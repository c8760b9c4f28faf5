// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/image/disk_image.hpp"

namespace guestfrag {

/// Deepest chain guestfrag follows; deeper ones are refused as corrupt (or loops).
inline constexpr std::size_t kMaxChainDepth = 64;

/// Opens a layered image: the file at `path`, then its parent, grandparent, ... as the
/// formats record them. `parents[i]`, when given, replaces the recorded parent of the
/// layer at depth i (so `--parent` supplies a moved or missing base). Throws
/// Error(NotFound, "parent not found: <recorded> ...") naming the recorded parent,
/// Error(Corrupt) for loops, chains deeper than kMaxChainDepth and identity mismatches.
[[nodiscard]] std::unique_ptr<DiskImage> open_chain(const std::string& path,
                                                    const std::vector<std::string>& parents = {});

}  // namespace guestfrag
