// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/mkimage/mkimage.hpp"

namespace guestfrag::mkimage {

/// One directory to create. Index 0 of PopulationPlan::dirs is the root (not created).
struct DirPlan {
    std::string name;
    std::uint32_t parent = 0;  ///< index into PopulationPlan::dirs
    std::uint32_t depth = 0;   ///< 0 for the root, 1..3 below it
    bool compressed = false;   ///< files created in it are NTFS-compressed
};

/// Why a file exists; decides how populate() writes it.
enum class FileRole : std::uint8_t {
    Normal,          ///< grown in round-robin chunks with its interleave group
    Refill,          ///< written after the deletions, into the holes they left
    AttrListPair,    ///< grown one cluster at a time against its twin: hundreds of runs
    Sparse,          ///< data at the start and far beyond, a hole between
    CompressedPair,  ///< compressible text grown one compression unit at a time against its twin
};

/// One regular file to create.
struct FilePlan {
    std::string name;
    std::uint64_t size = 0;               ///< bytes of the unnamed $DATA stream
    std::uint64_t named_stream_size = 0;  ///< 0: no named stream
    std::uint32_t dir = 0;                ///< index into PopulationPlan::dirs
    std::uint32_t chunk_clusters = 1;     ///< append step for Normal files
    FileRole role = FileRole::Normal;
    bool deleted = false;
};

/// The whole population, drawn up front so its size can be checked before anything is
/// written and so the result depends on the options alone.
struct PopulationPlan {
    std::vector<DirPlan> dirs;             ///< [0] is the root
    std::vector<FilePlan> files;           ///< creation order
    std::size_t refill_begin = 0;          ///< files[refill_begin..] are Refill files
    std::vector<std::uint32_t> deletions;  ///< indices into files, in deletion order
    std::uint32_t interleave = 1;
    std::uint64_t cluster_size = 4096;
    /// Kept files to list in \\Windows\\Prefetch\\Layout.ini once the population is written
    /// (fewer when fewer are kept); 0: no Layout.ini.
    std::uint64_t layout_ini_files = 0;
};

/// Names of the named streams the generator writes (small resident / large non-resident).
inline constexpr const char* kSmallStreamName = "Zone.Identifier";
inline constexpr const char* kLargeStreamName = "AFP_Resource";
/// What Windows writes into Zone.Identifier for a file downloaded from the Internet.
inline constexpr std::string_view kZoneIdentifier = "[ZoneTransfer]\r\nZoneId=3\r\n";

/// Clusters in an NTFS compression unit (what libntfs-3g and Windows write).
inline constexpr std::uint64_t kCompressionUnitClusters = 16;
/// Largest cluster NTFS compresses on.
inline constexpr std::uint64_t kMaxCompressedCluster = 4096;

/// Bytes of data at each end of the sparse file (the hole between is 16 MiB or more).
[[nodiscard]] inline std::uint64_t sparse_piece(std::uint64_t cluster_size) {
    return cluster_size > 64 * 1024 ? cluster_size : 64 * 1024;
}

/// Draws the population for `options` on a volume of `volume_length` bytes. Sizes are
/// scaled down to fit `options.fill`. Throws Error(Unsupported) when even the file records
/// do not fit ("--size is too small for N files"). Cost: O(files) time and memory.
[[nodiscard]] PopulationPlan plan_population(const MkImageOptions& options, std::uint64_t volume_length);

}  // namespace guestfrag::mkimage
