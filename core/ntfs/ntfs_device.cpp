// SPDX-License-Identifier: GPL-2.0-or-later
// libntfs-3g device operations over a DiskImage: the adapter of docs/design.md §1's I/O seam.
#include "core/ntfs/ntfs_device.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>


#include "core/error.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/image/disk_image.hpp"

namespace guestfrag::ntfs {
namespace {

struct DeviceState {
    const DiskImage* image;
    std::uint64_t offset;
    std::uint64_t length;
    std::int64_t position = 0;
};

DeviceState& state(ntfs_device* dev) { return *static_cast<DeviceState*>(dev->d_private); }

int dev_open(ntfs_device* dev, int flags) {
    if ((flags & O_ACCMODE) != O_RDONLY) {
        errno = EROFS;
        return -1;
    }
    NDevSetOpen(dev);
    NDevSetReadOnly(dev);
    return 0;
}

// libntfs-3g calls close exactly once per device, from a failed mount or from ntfs_umount,
// and never touches d_private afterwards: this is where the state's lifetime ends.
int dev_close(ntfs_device* dev) {
    delete static_cast<DeviceState*>(dev->d_private);
    dev->d_private = nullptr;
    NDevClearOpen(dev);
    return 0;
}

s64 dev_pread(ntfs_device* dev, void* buf, s64 count, s64 offset) {
    const DeviceState& s = state(dev);
    if (count < 0 || offset < 0) {
        errno = EINVAL;
        return -1;
    }
    const auto start = static_cast<std::uint64_t>(offset);
    if (start >= s.length) return 0;  // end of the partition reads as EOF, like a file
    const std::uint64_t n = std::min<std::uint64_t>(static_cast<std::uint64_t>(count), s.length - start);
    try {
        s.image->read(s.offset + start, std::span(static_cast<std::byte*>(buf), n));
    } catch (const Error&) {
        errno = EIO;
        return -1;
    }
    return static_cast<s64>(n);
}

s64 dev_seek(ntfs_device* dev, s64 offset, int whence) {
    DeviceState& s = state(dev);
    switch (whence) {
        case SEEK_SET: s.position = offset; break;
        case SEEK_CUR: s.position += offset; break;
        case SEEK_END: s.position = static_cast<s64>(s.length) + offset; break;
        default: errno = EINVAL; return -1;
    }
    return s.position;
}

s64 dev_read(ntfs_device* dev, void* buf, s64 count) {
    const s64 n = dev_pread(dev, buf, count, state(dev).position);
    if (n > 0) state(dev).position += n;
    return n;
}

s64 dev_write(ntfs_device*, const void*, s64) {
    errno = EROFS;
    return -1;
}

s64 dev_pwrite(ntfs_device*, const void*, s64, s64) {
    errno = EROFS;
    return -1;
}

int dev_sync(ntfs_device*) { return 0; }

int dev_stat(ntfs_device* dev, struct stat* st) {
    std::memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0444;
    st->st_size = static_cast<off_t>(state(dev).length);
    return 0;
}

int dev_ioctl(ntfs_device*, unsigned long, void*) {
    // No block-device ioctls: libntfs-3g then falls back to seek/stat for the size.
    errno = ENOTTY;
    return -1;
}

ntfs_device_operations image_device_ops = {
    dev_open, dev_close, dev_seek, dev_read, dev_write, dev_pread, dev_pwrite, dev_sync, dev_stat, dev_ioctl,
};

}  // namespace

ntfs_device* make_image_device(const DiskImage& image, std::uint64_t offset, std::uint64_t length) {
    auto* s = new DeviceState{&image, offset, length};
    const std::string name = image.path() + "@" + std::to_string(offset);
    ntfs_device* dev = ntfs_device_alloc(name.c_str(), 0, &image_device_ops, s);
    if (dev == nullptr) delete s;
    return dev;
}

}  // namespace guestfrag::ntfs
