// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "core/impact/impact.hpp"

namespace guestfrag {

/// The Volume Shadow Copy state of `volume` (docs/impact.md §5): the catalog and the
/// diff-area store files Windows keeps in `\System Volume Information`, found by their
/// fixed names. Leaves copy_on_write_bytes 0 (it depends on a plan). O(files + streams).
[[nodiscard]] VssFigures find_shadow_copies(const VolumeMap& volume);

}  // namespace guestfrag
