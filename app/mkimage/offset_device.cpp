// SPDX-License-Identifier: GPL-2.0-or-later
// ntfs_device_operations over a window of an already open file. Mirrors libntfs-3g's
// unix_io.c minus what only matters for block devices (locking, ioctls, geometry).
#include "app/mkimage/offset_device.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace guestfrag::mkimage {

namespace {

OffsetWindow& window(ntfs_device* dev) { return *static_cast<OffsetWindow*>(dev->d_private); }

/// Clamps a transfer to the window; -1 with EINVAL for negative positions.
s64 clamp(const OffsetWindow& w, s64 count, s64 pos) {
    if (pos < 0 || count < 0) {
        errno = EINVAL;
        return -1;
    }
    const auto length = static_cast<s64>(w.length);
    if (pos >= length) return 0;
    return count < length - pos ? count : length - pos;
}

s64 window_pread(ntfs_device* dev, void* buf, s64 count, s64 pos) {
    const OffsetWindow& w = window(dev);
    const s64 n = clamp(w, count, pos);
    if (n <= 0) return n;
    return ::pread(w.fd, buf, static_cast<size_t>(n),
                   static_cast<off_t>(w.offset + static_cast<std::uint64_t>(pos)));
}

s64 window_pwrite(ntfs_device* dev, const void* buf, s64 count, s64 pos) {
    if (NDevReadOnly(dev)) {
        errno = EROFS;
        return -1;
    }
    const OffsetWindow& w = window(dev);
    const s64 n = clamp(w, count, pos);
    if (n < 0) return n;
    if (n == 0 && count > 0) {
        errno = ENOSPC;  // past the end of the volume
        return -1;
    }
    NDevSetDirty(dev);
    return ::pwrite(w.fd, buf, static_cast<size_t>(n),
                    static_cast<off_t>(w.offset + static_cast<std::uint64_t>(pos)));
}

int window_open(ntfs_device* dev, int flags) {
    if (NDevOpen(dev)) {
        errno = EBUSY;
        return -1;
    }
    if ((flags & O_ACCMODE) != O_RDWR) NDevSetReadOnly(dev);
    NDevSetOpen(dev);
    return 0;
}

int window_close(ntfs_device* dev) {
    if (!NDevOpen(dev)) {
        errno = EBADF;
        return -1;
    }
    NDevClearOpen(dev);
    return 0;
}

s64 window_seek(ntfs_device* dev, s64 offset, int whence) {
    OffsetWindow& w = window(dev);
    s64 base = 0;
    if (whence == SEEK_CUR)
        base = w.position;
    else if (whence == SEEK_END)
        base = static_cast<s64>(w.length);
    else if (whence != SEEK_SET) {
        errno = EINVAL;
        return -1;
    }
    if (base + offset < 0) {
        errno = EINVAL;
        return -1;
    }
    w.position = base + offset;
    return w.position;
}

s64 window_read(ntfs_device* dev, void* buf, s64 count) {
    const s64 n = window_pread(dev, buf, count, window(dev).position);
    if (n > 0) window(dev).position += n;
    return n;
}

s64 window_write(ntfs_device* dev, const void* buf, s64 count) {
    const s64 n = window_pwrite(dev, buf, count, window(dev).position);
    if (n > 0) window(dev).position += n;
    return n;
}

// No fsync: a generated image is reproducible from its options, and one fsync of gigabytes
// would double the run time on slow disks. The page cache serves every later reader.
int window_sync(ntfs_device* dev) {
    NDevClearDirty(dev);
    return 0;
}

int window_stat(ntfs_device* dev, struct stat* buf) {
    const OffsetWindow& w = window(dev);
    if (::fstat(w.fd, buf) != 0) return -1;
    buf->st_size = static_cast<off_t>(w.length);
    return 0;
}

int window_ioctl(ntfs_device*, unsigned long, void*) {
    errno = ENOTTY;  // not a block device: libntfs-3g falls back to the boot sector's values
    return -1;
}

ntfs_device_operations g_operations = {
    window_open,  window_close,  window_seek, window_read, window_write,
    window_pread, window_pwrite, window_sync, window_stat, window_ioctl,
};

}  // namespace

ntfs_device_operations* offset_device_operations() { return &g_operations; }

}  // namespace guestfrag::mkimage
