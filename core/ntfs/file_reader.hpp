// SPDX-License-Identifier: GPL-2.0-or-later
// Reading files and directories of an NTFS volume by path (a trace source's view of the
// guest: \Windows\Prefetch\*.pf, Layout.ini), not its cluster map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ntfs/ntfs_volume.hpp"

namespace guestfrag {

class DiskImage;

namespace ntfs {

/// One name in a directory index.
struct DirectoryEntry {
    std::string name;              ///< long (Win32 or POSIX) name, UTF-8, as stored (case kept)
    std::uint64_t mft_record = 0;  ///< base record of the file it names
    bool directory = false;
};

/// Read-only access by path to the files of one NTFS volume stored in a DiskImage.
/// Paths are volume paths with '\' or '/' separators ("\\Windows\\Prefetch\\Layout.ini"),
/// looked up case-insensitively as Windows does. Owns its libntfs-3g mount; the image must
/// outlive it. Not safe for concurrent use (libntfs-3g inodes are not), cheap to make again.
class VolumeFiles {
public:
    /// Cap for read_file(): trace sources are small, anything larger is not one.
    static constexpr std::uint64_t kDefaultMaxBytes = 64ull << 20;

    /// Mounts image bytes [offset, offset + length) read-only. Throws Error(Corrupt) with
    /// libntfs-3g's reason when that is not a mountable NTFS volume.
    VolumeFiles(const DiskImage& image, std::uint64_t offset, std::uint64_t length);

    /// The unnamed $DATA of the file at `path` (resident or not, sparse or compressed:
    /// libntfs-3g expands them). Throws Error(NotFound) when a component of the path does
    /// not exist, Error(Unsupported) for a directory, an encrypted file or one larger than
    /// `max_bytes`, Error(Corrupt)/Error(Io) when libntfs-3g cannot read it.
    /// Cost: reads the file once; memory = its size.
    [[nodiscard]] std::vector<std::byte> read_file(std::string_view path,
                                                   std::uint64_t max_bytes = kDefaultMaxBytes) const;

    /// The entries of the directory at `path` in index (collation) order, without "." and
    /// "..", and without the DOS 8.3 aliases of long names. NTFS metadata files ($MFT, ...)
    /// are listed in the root like any other name. Throws Error(NotFound) when the path
    /// does not exist, Error(Unsupported) when it names a file, Error(Corrupt) when the
    /// index cannot be read. Cost: one pass over the directory index.
    [[nodiscard]] std::vector<DirectoryEntry> list_directory(std::string_view path) const;

private:
    Volume volume_;
};

}  // namespace ntfs
}  // namespace guestfrag
