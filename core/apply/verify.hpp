// SPDX-License-Identifier: GPL-2.0-or-later
// The checks that prove a disk holds what a plan predicted, each independent of libntfs-3g's
// writing code: guestfrag's own MFT walk of the new disk against the plan's after-state,
// stream contents hashed through the runlists each disk's own walk found.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/model/volume_map.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class DiskImage;

/// XXH3-64 of every non-resident stream's clusters (holes as zeros), keyed by (record,
/// label), read from `image` through `volume`'s runlists. Throws what DiskImage::read throws
/// and Error(Cancelled) from `progress` (streams). Cost: reads every allocated cluster once.
[[nodiscard]] std::map<std::pair<std::uint64_t, std::string>, std::uint64_t> stream_digests(
    const DiskImage& image, const VolumeMap& volume, const Progress& progress = {});

/// The first difference between two maps of a volume as text (free space, the set of
/// streams, a stream's runs with LCN-contiguous neighbours merged), or nothing when the
/// allocation is the same. O(streams + runs).
[[nodiscard]] std::optional<std::string> allocation_difference(const VolumeMap& expected, const VolumeMap& actual);

/// Where $Bitmap (the map's free space) and the union of every stream's runs disagree, as
/// text, or nothing when the used clusters are exactly those the runlists claim.
/// O(runs · log runs).
[[nodiscard]] std::optional<std::string> bitmap_difference(const VolumeMap& volume);

}  // namespace guestfrag
