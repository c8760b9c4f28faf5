// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <filesystem>
#include <string>

#include "app/mkimage/layout.hpp"

namespace guestfrag::mkimage {

/// Writes a fresh `table` ("msdos" or "gpt") to the existing disk file `disk` with libparted:
/// one primary NTFS partition (msdos id 0x07 / GPT basic data) covering `layout`'s volume
/// exactly. Touches only the table sectors. Throws Error(Io) with libparted's messages.
void write_partition_table(const std::filesystem::path& disk, const std::string& table,
                           const DiskLayout& layout);

}  // namespace guestfrag::mkimage
