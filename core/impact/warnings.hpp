// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <vector>

#include "core/image/disk_image.hpp"
#include "core/impact/impact.hpp"

namespace guestfrag {

/// The warnings of docs/impact.md §8 for the figures in `impact` of a plan on `image`,
/// most severe first (then in the order of that section). Pure; O(partitions + chunk sizes).
[[nodiscard]] std::vector<ImpactWarning> impact_warnings(const Impact& impact, const DiskImage& image);

}  // namespace guestfrag
