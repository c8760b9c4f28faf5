// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

#include "app/mkimage/mkimage.hpp"

namespace guestfrag::mkimage {

inline constexpr std::uint64_t kSectorSize = 512;
/// Sectors GPT keeps at the end of the disk: 32 of backup entries + the backup header.
inline constexpr std::uint64_t kGptBackupSectors = 33;
/// First usable sector of a GPT disk (protective MBR, header, 32 sectors of entries).
inline constexpr std::uint64_t kGptFirstUsableSector = 34;

/// Where the NTFS volume goes on the disk. Bytes.
struct DiskLayout {
    bool partitioned = true;          ///< false for table "none"
    std::uint64_t volume_offset = 0;  ///< multiple of 512
    std::uint64_t volume_length = 0;  ///< multiple of 512
};

/// Checks the options that do not depend on the file population and derives the layout.
/// Throws Error(Unsupported) with a one-line reason naming the option.
[[nodiscard]] DiskLayout plan_layout(const MkImageOptions& options);

}  // namespace guestfrag::mkimage
