// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/impact/content_map.hpp"
#include "core/impact/impact.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// The deduplication census of docs/impact.md §4 (deep): keys every chunk of every size in
/// `chunks` (powers of two, ascending) over the whole of `image` as it is and as `after`
/// describes it, and counts distinct contents. Only the smallest chunks are hashed from the
/// bytes; larger ones from their parts' hashes. One sequential pass over the disk plus one
/// read per overridden piece; ranges no layer allocates are known zeros and never read.
/// Reads go through `limiter`; progress is in bytes of the disk and may cancel.
/// Memory: 16 bytes per non-zero chunk of each size (a sorted vector of XXH3-128 hashes),
/// about 0.7 % of the allocated disk for 4K+8K+16K+32K. Throws the image's read errors.
[[nodiscard]] std::vector<DedupFigures::Deep> deep_dedup(const DiskImage& image, const ContentMap& after,
                                                         std::span<const std::uint64_t> chunks, RateLimiter& limiter,
                                                         const Progress& progress = {});

}  // namespace guestfrag
