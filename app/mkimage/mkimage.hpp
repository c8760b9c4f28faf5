// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/progress.hpp"

namespace guestfrag {

/// What `guestfrag mkimage` generates: a sparse raw disk with one NTFS partition filled
/// with a deterministic (per seed) population of fragmented files.
struct MkImageOptions {
    std::filesystem::path output;
    std::uint64_t disk_size = 256ull << 20;      ///< bytes of the virtual disk
    std::string table = "msdos";                 ///< "msdos", "gpt" or "none" (bare volume)
    std::uint64_t partition_start = 1ull << 20;  ///< bytes; ignored for "none"
    std::uint32_t cluster_size = 4096;
    std::uint64_t files = 2000;             ///< files to create (before deletions)
    std::uint32_t directories = 0;          ///< 0: about one per 500 files (at least a few)
    std::uint32_t interleave = 8;           ///< files grown concurrently (fragmentation)
    double delete_fraction = 0.2;           ///< share of files deleted afterwards (free holes)
    std::uint32_t named_stream_every = 50;  ///< one file in N gets a named $DATA stream; 0: none
    std::uint32_t seed = 1;
    /// Runs each file of the attribute-list pair (two files grown against each other one
    /// cluster at a time) reaches, room permitting. About 300 runs fill an MFT record of
    /// mapping pairs: 1200 spread over four extension records and a resident
    /// $ATTRIBUTE_LIST; from about 8000 the list no longer fits the base record and is
    /// non-resident.
    std::uint64_t list_runs = 1200;
    std::string label = "guestfrag";
    /// Share of the volume's free space the file data may take at its peak. File sizes are
    /// scaled down (all by the same factor) when the drawn sizes would exceed it.
    double fill = 0.6;
    /// Adds two NTFS-compressed logs in a compressed \\Logs directory, grown against each
    /// other one compression unit at a time. NTFS compresses only on clusters up to 4 KiB.
    bool compressed = false;
    /// After the population, lists this many of the kept regular files, drawn at random in a
    /// random (boot) order, in \\Windows\\Prefetch\\Layout.ini as Windows' prefetcher writes it;
    /// fewer when fewer files are kept. 0: no Layout.ini (the population is the same either way).
    std::uint64_t layout_ini = 0;
};

/// What make_image produced. MFT record numbers let tests look at particular files.
struct MkImageSummary {
    std::uint64_t files_created = 0;  ///< regular files created, deleted ones included
    std::uint64_t files_deleted = 0;
    std::uint64_t files_kept = 0;                       ///< created - deleted: what a listing shows
    std::uint32_t directories = 0;                      ///< created, the root not counted
    std::uint64_t named_streams = 0;                    ///< named $DATA streams on kept files
    std::uint64_t fragmented_files = 0;                 ///< kept files with a stream in > 1 extent
    std::uint64_t attribute_list_files = 0;             ///< kept files whose record carries $ATTRIBUTE_LIST
    std::uint64_t data_bytes = 0;                       ///< bytes of stream data in kept files
    std::uint64_t partition_offset = 0;                 ///< bytes from the start of the disk
    std::uint64_t partition_length = 0;                 ///< bytes of the NTFS volume
    bool volume_full = false;                           ///< the volume filled up; fewer files were made
    std::vector<std::uint64_t> attribute_list_records;  ///< kept files with $ATTRIBUTE_LIST
    std::vector<std::uint64_t> fragmented_records;      ///< first kept fragmented files (<= 16)
    std::uint64_t sparse_record = 0;                    ///< a file with a hole in the middle; 0: none
    std::vector<std::uint64_t> compressed_records;      ///< the compressed logs (MkImageOptions::compressed)
    std::uint64_t named_stream_record = 0;              ///< first kept file with a named stream; 0: none
    std::uint64_t layout_ini_files = 0;                 ///< paths in Layout.ini (MkImageOptions::layout_ini)
    std::uint64_t layout_ini_record = 0;                ///< \\Windows\\Prefetch\\Layout.ini; 0: none
};

/// Generates the image described by `options` (libparted + mkntfs + libntfs-3g) and
/// overwrites `output`; a failed run leaves no output behind. The file population
/// (names, sizes, extents) is a pure function of the options; volume serial, GUIDs and
/// time stamps are not. When the volume fills up anyway (sizes are scaled to `fill`, so
/// only with extreme options), creation stops, what was made is kept and the summary
/// says `volume_full`.
/// Throws Error(Unsupported) for options it cannot honour (checked before anything is
/// written), Error(Io) for host I/O failures, Error(Cancelled) from `progress`; reports
/// progress in files created. Cost: about one pass over the data written, no fsync.
MkImageSummary make_image(const MkImageOptions& options, const Progress& progress = {});

}  // namespace guestfrag
