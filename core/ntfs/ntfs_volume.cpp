// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/ntfs/ntfs_volume.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include "core/ntfs/ntfs3g.hpp"

namespace guestfrag::ntfs {
namespace {

// The last error libntfs-3g logged on this thread since the last mount, on one line.
thread_local std::string g_last_message;
// The device's last read or write failure on this thread, until an error reports it.
thread_local std::string g_device_failure;

int record_message(const char*, const char*, int, u32 level, void*, const char* format, va_list args) {
    if ((level & (NTFS_LOG_LEVEL_ERROR | NTFS_LOG_LEVEL_PERROR | NTFS_LOG_LEVEL_CRITICAL)) == 0) return 0;
    char buf[512];
    const int n = std::vsnprintf(buf, sizeof buf, format, args);
    std::string text(buf, n < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
    if (level & NTFS_LOG_LEVEL_PERROR) text += std::string(": ") + std::strerror(errno);
    for (char& c : text)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (!text.empty()) g_last_message = std::move(text);
    return 0;
}

/// Routes libntfs-3g's logging into g_last_message instead of stderr (idempotent).
void capture_library_log() {
    static std::once_flag once;
    std::call_once(once, [] {
        ntfs_log_set_handler(record_message);
        ntfs_log_set_levels(NTFS_LOG_LEVEL_ERROR | NTFS_LOG_LEVEL_PERROR | NTFS_LOG_LEVEL_CRITICAL);
    });
}

}  // namespace

void note_device_failure(const std::string& what) { g_device_failure = what; }

std::string library_reason(int err) {
    if (!g_device_failure.empty() && err == EIO) return std::exchange(g_device_failure, {});
    std::string reason = g_last_message;
    if (reason.empty()) reason = err != 0 ? std::strerror(err) : "unknown failure";
    return reason;
}

void throw_library_error(ErrorKind kind, const std::string& what) {
    const int err = errno;
    if (err == ENOSPC) throw VolumeFull();
    throw Error(kind, what + ": " + library_reason(err));
}

void Volume::Unmount::operator()(_ntfs_volume* volume) const noexcept {
    // A failure to release cannot be acted upon here; unmount() reports it.
    if (volume != nullptr) ntfs_umount(volume, FALSE);
}

Volume::Volume(Device device, MountMode mode) : device_(std::move(device)) {
    capture_library_log();
    g_last_message.clear();
    g_device_failure.clear();
    errno = 0;
    const unsigned long flags = !device_.writable()           ? NTFS_MNT_RDONLY
                                : mode == MountMode::Forensic ? NTFS_MNT_FORENSIC
                                                              : NTFS_MNT_NONE;
    volume_.reset(ntfs_device_mount(device_.get(), flags));
    if (!volume_) throw_library_error(ErrorKind::Corrupt, "cannot mount NTFS volume");
    device_.release();  // ntfs_umount frees it
}

void Volume::unmount() {
    _ntfs_volume* volume = volume_.release();
    errno = 0;
    if (volume != nullptr && ntfs_umount(volume, FALSE) != 0)
        throw_library_error(ErrorKind::Io, "cannot unmount the NTFS volume");
}

void Volume::check_clean() const {
    ntfs_volume* vol = volume_.get();
    if (vol->flags & VOLUME_IS_DIRTY)
        throw Error(ErrorKind::Unsafe,
                    "NTFS volume is marked dirty (not cleanly shut down); run chkdsk in the guest first");
    errno = 0;
    if (ntfs_volume_check_hiberfile(vol, 0) != 0) {
        if (errno == EPERM)
            throw Error(ErrorKind::Unsafe,
                        "Windows is hibernated on this volume (or Fast Startup is on); shut it down fully first");
        throw Error(ErrorKind::Corrupt, "cannot check hiberfil.sys: " + library_reason(errno));
    }
}

}  // namespace guestfrag::ntfs
