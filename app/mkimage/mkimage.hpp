// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/progress.hpp"

namespace guestfrag {

/// What `guestfrag mkimage` generates: a sparse raw disk with one NTFS partition filled
/// with a deterministic (per seed) population of fragmented files.
struct MkImageOptions {
    std::filesystem::path output;
    std::uint64_t disk_size = 256ull << 20;      ///< bytes of the virtual disk
    std::string table = "msdos";                  ///< "msdos", "gpt" or "none" (bare volume)
    std::uint64_t partition_start = 1ull << 20;   ///< bytes; ignored for "none"
    std::uint32_t cluster_size = 4096;
    std::uint64_t files = 2000;                   ///< files to create (before deletions)
    std::uint32_t directories = 0;                ///< 0: about one per 500 files
    std::uint32_t interleave = 8;                 ///< files grown concurrently (fragmentation)
    double delete_fraction = 0.2;                 ///< share of files deleted afterwards (free holes)
    std::uint32_t named_stream_every = 50;        ///< one file in N gets a named $DATA stream
    std::uint32_t seed = 1;
    std::string label = "guestfrag";
};

/// Generates the image described by `options` (mkntfs + libntfs-3g). Overwrites `output`.
/// Throws Error on failure; reports progress in files created.
void make_image(const MkImageOptions& options, const Progress& progress = {});

}  // namespace guestfrag
