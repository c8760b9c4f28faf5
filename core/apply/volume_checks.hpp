// SPDX-License-Identifier: GPL-2.0-or-later
// The state a volume must be in before anything may be moved on it offline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/model/volume_map.hpp"

namespace guestfrag {

class DiskImage;

/// Where an NTFS volume lies on a virtual disk, bytes.
struct VolumeWindow {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

/// Throws Error(Unsafe) with one line saying why, when the NTFS volume at `window` of
/// `image` (whose map is `volume`) may not be changed offline: the dirty flag is set,
/// Windows is hibernated on it (Fast Startup included), $LogFile's restart area does not
/// say the volume was shut down cleanly, $MFTMirr differs from the system files' records of $MFT,
/// or shadow copy stores exist and `allow_vss` is false. Read-only; mounts the volume with
/// NTFS_MNT_RDONLY. Throws Error(Corrupt) when the volume cannot be mounted or $LogFile
/// cannot be read. Cost: reads $LogFile's first pages, the mirrored records and hiberfil's
/// first bytes.
void check_volume_state(const DiskImage& image, const VolumeWindow& window, const VolumeMap& volume,
                        bool allow_vss);

/// Whether the restart area of a $LogFile whose first bytes are `head` says the volume was
/// shut down cleanly: true for an empty log (never written since it was reset), otherwise
/// the more recent of the two restart pages ("RSTR" or chkdsk's "CHKD") must have no log
/// client in use or RESTART_VOLUME_IS_CLEAN set. Returns the reason when it is not clean.
/// `head` holds at least the first two restart pages (8 KiB covers every page size NTFS
/// writes restart pages at, 4 KiB).
[[nodiscard]] std::optional<std::string> logfile_unclean_reason(const std::string& head);

/// The first record of $MFT that $MFTMirr does not mirror, as text, or nothing when the
/// mirror matches: the records below min(mirror records, 16), each over its used part, as
/// Windows keeps them and libntfs-3g's mount compares them (docs/apply.md, step 2). Mounts
/// read-only.
[[nodiscard]] std::optional<std::string> mft_mirror_difference(const DiskImage& image, const VolumeWindow& window);

}  // namespace guestfrag
