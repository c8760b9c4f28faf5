// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/ntfs/ntfs_volume.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>


#include "core/error.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_device.hpp"

namespace guestfrag::ntfs {
namespace {

thread_local std::string g_last_message;

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

}  // namespace

void capture_library_log() {
    static std::once_flag once;
    std::call_once(once, [] {
        ntfs_log_set_handler(record_message);
        ntfs_log_set_levels(NTFS_LOG_LEVEL_ERROR | NTFS_LOG_LEVEL_PERROR | NTFS_LOG_LEVEL_CRITICAL);
    });
}

std::string last_library_message() { return g_last_message; }

void VolumeUnmounter::operator()(_ntfs_volume* volume) const noexcept {
    // Read-only: nothing to flush, and a failure to release cannot be acted upon.
    if (volume != nullptr) ntfs_umount(volume, FALSE);
}

VolumeHandle mount_read_only(const DiskImage& image, std::uint64_t offset, std::uint64_t length) {
    capture_library_log();
    g_last_message.clear();
    ntfs_device* dev = make_image_device(image, offset, length);
    if (dev == nullptr) throw Error(ErrorKind::Internal, "cannot allocate an ntfs device");
    errno = 0;
    // NTFS_MNT_RDONLY keeps libntfs-3g from resetting $LogFile or touching anything else.
    ntfs_volume* volume = ntfs_device_mount(dev, NTFS_MNT_RDONLY);
    if (volume == nullptr) {
        const int err = errno;
        // A mount that failed after opening the device has closed it, which released its
        // state; one that failed earlier has not.
        if (dev->d_private != nullptr) dev->d_ops->close(dev);
        ntfs_device_free(dev);
        std::string reason = last_library_message();
        if (reason.empty()) reason = err != 0 ? std::strerror(err) : "unknown failure";
        throw Error(ErrorKind::Corrupt, "cannot mount NTFS volume: " + reason);
    }
    return VolumeHandle(volume);
}

}  // namespace guestfrag::ntfs
