// SPDX-License-Identifier: GPL-2.0-or-later
// The one place that owns libntfs-3g volumes and turns libntfs-3g's failures into Errors.
#pragma once

#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/ntfs/ntfs_device.hpp"

struct _ntfs_volume;

namespace guestfrag::ntfs {

/// How a writable device is mounted. Normal lets libntfs-3g refuse hibernated or unclean
/// volumes and reset $LogFile, as any writer should. Forensic (NTFS_MNT_FORENSIC) changes
/// nothing at mount time and checks nothing: for a caller that checked the volume's state
/// itself and must leave every byte it does not mean to change as it was.
enum class MountMode { Normal, Forensic };

/// A mounted libntfs-3g volume together with the Device under it. Move-only. Destruction
/// unmounts without checking: a read-only volume has nothing to write back; a writable one
/// is unmount()ed by its user first, so that a failure to write back is seen.
class Volume {
public:
    /// Mounts the NTFS file system on `device`: read-only (NTFS_MNT_RDONLY, so libntfs-3g
    /// does not even reset $LogFile) unless the device is writable, then as `mode` says.
    /// Throws Error(Corrupt) with libntfs-3g's own reason when the volume cannot be mounted.
    explicit Volume(Device device, MountMode mode = MountMode::Normal);

    [[nodiscard]] _ntfs_volume* get() const noexcept { return volume_.get(); }

    /// Throws Error(Unsafe) when the volume is marked dirty or Windows is hibernated on it
    /// (Fast Startup included, as libntfs-3g's hiberfil check sees it): its on-disk state
    /// is then not what Windows will use. Error(Corrupt) when hiberfil.sys cannot be read.
    void check_clean() const;

    /// Writes everything back and unmounts (the volume is gone afterwards, even on
    /// failure). Throws Error(Io) when libntfs-3g cannot write back.
    void unmount();

private:
    struct Unmount {
        void operator()(_ntfs_volume* volume) const noexcept;
    };

    Device device_;  // declared first: outlives the volume mounted on it
    std::unique_ptr<_ntfs_volume, Unmount> volume_;
};

/// Thrown for libntfs-3g's ENOSPC: the volume has no room left (a writer may stop there).
class VolumeFull : public Error {
public:
    VolumeFull() : Error(ErrorKind::Io, "the volume is full") {}
};

/// Why the libntfs-3g call that just failed with `err` (its errno) failed: the device's own
/// failure when it had one (note_device_failure), else the last error libntfs-3g logged on
/// this thread since the last mount, squashed to one line, else `err`'s text. libntfs-3g
/// reports through its logger, not errno alone, and mounting routes that logger here
/// instead of stderr: we keep its words for our errors.
[[nodiscard]] std::string library_reason(int err);

/// Records why the device under libntfs-3g failed a read or write (the host file's error,
/// e.g. "cannot write OUT at offset N: No space left on device"), which libntfs-3g only
/// sees as EIO: library_reason gives these words for the next failure on this thread.
void note_device_failure(const std::string& what);

/// Throws the typed error for a libntfs-3g call that returned NULL or -1 with errno set:
/// VolumeFull for ENOSPC, otherwise Error(kind, "<what>: <library_reason>").
[[noreturn]] void throw_library_error(ErrorKind kind, const std::string& what);

}  // namespace guestfrag::ntfs
