// SPDX-License-Identifier: GPL-2.0-or-later
// Windows Prefetch (.pf) files, read by libscca: the one place that owns libscca handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace guestfrag {

/// What a Prefetch file says about one program's start-up reads.
struct PrefetchFile {
    /// A volume the files were on, as the prefetcher named it.
    struct Volume {
        std::string device_path;   ///< "\\DEVICE\\HARDDISKVOLUME1" or "\\VOLUME{...}"
        std::uint32_t serial = 0;  ///< low 32 bits of the NTFS volume serial number
    };

    std::uint32_t format_version = 0;    ///< 17 (XP), 23 (Vista/7), 26 (8.1), 30 (10, MAM-compressed)
    std::string executable;              ///< "CMD.EXE" (the file stores the name only, 29 chars at most)
    std::uint64_t last_run = 0;          ///< latest of the stored run times (FILETIME), 0 if none is set
    std::vector<std::string> filenames;  ///< NT paths as stored, in file order, UTF-8
    std::vector<Volume> volumes;
};

/// Whether `head` (the first 8 bytes or more of a file) starts like a Prefetch file:
/// "SCCA" at offset 4 (versions 17–30 uncompressed) or "MAM\x04" at offset 0 (Windows 10
/// XPRESS-Huffman compressed). Cheap; libscca decides for real when reading.
[[nodiscard]] bool looks_like_prefetch(std::span<const std::byte> head);

/// Reads a Prefetch file of any version from the host. Throws Error(Corrupt,
/// "prefetch file NAME: <libscca's reason>") when libscca cannot read it, Error(NotFound)
/// when it does not exist. Cost: libscca reads (and decompresses) the whole file.
[[nodiscard]] PrefetchFile read_prefetch(const std::filesystem::path& path);

/// Same for content already in memory (a .pf file read from a guest volume); `name` labels
/// errors. libscca reads files only, so the bytes pass through a private temporary file
/// (removed again before returning or throwing).
[[nodiscard]] PrefetchFile read_prefetch(std::span<const std::byte> content, const std::string& name);

/// The volume paths ("\\WINDOWS\\SYSTEM32\\NTDLL.DLL") of the files `pf` names, in order,
/// on the NTFS volume whose serial number is `volume_serial`: when one of the file's
/// volumes has that serial (low 32 bits), only names under its device path are kept (a
/// program also reads files on other volumes); when none has, the trace came from
/// elsewhere and every name is kept. Device prefixes are stripped (to_volume_path). The
/// executable is prepended when libscca gives it with a path and the list lacks it. Pure.
[[nodiscard]] std::vector<std::string> prefetch_volume_paths(const PrefetchFile& pf,
                                                             std::uint64_t volume_serial);

}  // namespace guestfrag
