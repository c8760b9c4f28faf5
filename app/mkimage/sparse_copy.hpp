// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

namespace guestfrag::mkimage {

/// Copies the data of file `from` (all of it, from offset 0) into `to` at `offset`, visiting
/// only data extents (SEEK_DATA/SEEK_HOLE) and skipping all-zero blocks, so holes stay holes
/// when `to` is a fresh sparse file. Both are open descriptors, not closed here.
/// Throws Error(Io). Cost: reads only the allocated part of `from`.
void copy_data_extents(int from, int to, std::uint64_t offset);

}  // namespace guestfrag::mkimage
