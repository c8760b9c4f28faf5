// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "app/mkimage/mkimage.hpp"
#include "app/mkimage/ntfs_writer.hpp"
#include "app/mkimage/population.hpp"
#include "core/progress.hpp"

namespace guestfrag::mkimage {

/// Carries out `plan` on the mounted volume, in phases: directories; the attribute-list
/// pair and the sparse file; the first pass, `plan.interleave` files at a time grown in
/// round-robin chunks so their extents interleave; the deletions; then the refill files,
/// written while every other free cluster is fenced off so they fragment into the holes;
/// last, when the plan asks for it, \\Windows\\Prefetch\\Layout.ini listing kept files.
/// Fills the file and layout counts of `summary`. Stops creating files on VolumeFull and
/// sets summary.volume_full. Throws Error (I/O, Cancelled via `progress`).
void populate(NtfsWriter& ntfs, const PopulationPlan& plan, std::uint32_t seed, const Progress& progress,
              MkImageSummary& summary);

}  // namespace guestfrag::mkimage
