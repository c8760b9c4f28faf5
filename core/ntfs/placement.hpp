// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "core/model/volume_map.hpp"

namespace guestfrag::ntfs {

/// Marks streams Unmovable (NTFS metadata the file system pins) or Excluded (pagefile,
/// hibernation and swap files, VSS stores) per docs/design.md §3, with a reason, and fills
/// VolumeMap::unmovable. Needs files and streams filled and sorted.
void classify_placement(VolumeMap& volume);

}  // namespace guestfrag::ntfs
