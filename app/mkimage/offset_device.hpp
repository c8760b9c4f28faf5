// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

#include "app/mkimage/ntfs3g_rw.hpp"

namespace guestfrag::mkimage {

/// The window of a host file that holds the volume: libntfs-3g sees offset 0..length.
struct OffsetWindow {
    int fd = -1;                ///< borrowed; the device neither opens nor closes it
    std::uint64_t offset = 0;   ///< bytes
    std::uint64_t length = 0;   ///< bytes
    std::int64_t position = 0;  ///< for the seek/read/write calls
};

/// Device operations that serve libntfs-3g from an OffsetWindow passed as d_private, so the
/// volume can be written in place inside a partitioned disk file (no loop device, no
/// root). The table is static and lives for the program.
ntfs_device_operations* offset_device_operations();

}  // namespace guestfrag::mkimage
