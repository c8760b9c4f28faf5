// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace guestfrag::mkimage {

/// Parameters mkntfs writes into the boot sector and volume.
struct MkntfsParams {
    std::uint32_t cluster_size = 4096;
    std::uint64_t hidden_sectors = 0;  ///< partition start sector (boot sector "hidden sectors")
    std::string label;
};

/// Quick-formats the regular file `volume` (whole file = the volume) with mkntfs
/// (run_program). Throws Error(Unsupported) when mkntfs is not installed and Error(Io) with
/// mkntfs's last output line when it fails.
void run_mkntfs(const std::filesystem::path& volume, const MkntfsParams& params);

}  // namespace guestfrag::mkimage
