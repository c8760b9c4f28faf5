// SPDX-License-Identifier: GPL-2.0-or-later
// ntfs_device_operations over a window of a disk. Mirrors libntfs-3g's unix_io.c minus what
// only matters for block devices (locking, ioctls, geometry).
#include "core/ntfs/ntfs_device.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/writable_disk.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_volume.hpp"

namespace guestfrag::ntfs {

/// What a device's operations work on (its d_private): exactly one of image and file.
struct Device::Window {
    const DiskImage* image = nullptr;  ///< read-only devices
    WritableDisk* file = nullptr;      ///< writable devices
    std::uint64_t offset = 0;          ///< bytes
    std::uint64_t length = 0;          ///< bytes
    std::int64_t position = 0;         ///< for the seek/read/write calls

    void read(std::uint64_t pos, std::span<std::byte> out) const {
        if (file != nullptr)
            file->read(offset + pos, out);
        else
            image->read(offset + pos, out);
    }
};

// The one set of ntfs_device_operations. A friend of Device for its Window.
struct DeviceOperations {
    static Device::Window& window(ntfs_device* dev) { return *static_cast<Device::Window*>(dev->d_private); }

    /// Clamps a transfer to the window; -1 with EINVAL for negative positions.
    static s64 clamp(const Device::Window& w, s64 count, s64 pos) {
        if (pos < 0 || count < 0) {
            errno = EINVAL;
            return -1;
        }
        const auto length = static_cast<s64>(w.length);
        if (pos >= length) return 0;  // the end of the volume reads as EOF, like a file
        return count < length - pos ? count : length - pos;
    }

    static int open(ntfs_device* dev, int flags) {
        if (NDevOpen(dev)) {
            errno = EBUSY;
            return -1;
        }
        if ((flags & O_ACCMODE) != O_RDONLY && window(dev).file == nullptr) {
            errno = EROFS;
            return -1;
        }
        if ((flags & O_ACCMODE) != O_RDWR) NDevSetReadOnly(dev);
        NDevSetOpen(dev);
        return 0;
    }

    static int close(ntfs_device* dev) {
        if (!NDevOpen(dev)) {
            errno = EBADF;
            return -1;
        }
        NDevClearOpen(dev);
        return 0;
    }

    static s64 pread(ntfs_device* dev, void* buf, s64 count, s64 pos) {
        const Device::Window& w = window(dev);
        const s64 n = clamp(w, count, pos);
        if (n <= 0) return n;
        try {
            w.read(static_cast<std::uint64_t>(pos), std::span(static_cast<std::byte*>(buf), static_cast<std::size_t>(n)));
        } catch (const Error& e) {
            note_device_failure(e.what());
            errno = EIO;  // libntfs-3g only knows errno; its caller reports the failure
            return -1;
        }
        return n;
    }

    static s64 pwrite(ntfs_device* dev, const void* buf, s64 count, s64 pos) {
        const Device::Window& w = window(dev);
        if (NDevReadOnly(dev) || w.file == nullptr) {
            errno = EROFS;
            return -1;
        }
        const s64 n = clamp(w, count, pos);
        if (n < 0) return n;
        if (n == 0 && count > 0) {
            errno = ENOSPC;  // past the end of the volume
            return -1;
        }
        NDevSetDirty(dev);
        try {
            w.file->write(w.offset + static_cast<std::uint64_t>(pos),
                          std::span(static_cast<const std::byte*>(buf), static_cast<std::size_t>(n)));
        } catch (const Error& e) {
            note_device_failure(e.what());
            errno = EIO;
            return -1;
        }
        return n;
    }

    static s64 seek(ntfs_device* dev, s64 offset, int whence) {
        Device::Window& w = window(dev);
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

    static s64 read(ntfs_device* dev, void* buf, s64 count) {
        const s64 n = pread(dev, buf, count, window(dev).position);
        if (n > 0) window(dev).position += n;
        return n;
    }

    static s64 write(ntfs_device* dev, const void* buf, s64 count) {
        const s64 n = pwrite(dev, buf, count, window(dev).position);
        if (n > 0) window(dev).position += n;
        return n;
    }

    // No fsync: a read-only device has nothing to flush, and a generated image is
    // reproducible from its options while one fsync of gigabytes would double the run time
    // on slow disks. The page cache serves every later reader.
    static int sync(ntfs_device* dev) {
        NDevClearDirty(dev);
        return 0;
    }

    static int stat(ntfs_device* dev, struct stat* st) {
        const Device::Window& w = window(dev);
        std::memset(st, 0, sizeof *st);
        st->st_mode = S_IFREG | (w.file != nullptr ? 0644 : 0444);
        st->st_size = static_cast<off_t>(w.length);
        return 0;
    }

    // Not a block device: libntfs-3g falls back to seek/stat and the boot sector's values.
    static int ioctl(ntfs_device*, unsigned long, void*) {
        errno = ENOTTY;
        return -1;
    }

    static inline ntfs_device_operations table = {
        open, close, seek, read, write, pread, pwrite, sync, stat, ioctl,
    };
};

void Device::Free::operator()(ntfs_device* device) const noexcept {
    // Only devices no volume took over get here, and a failed mount closes what it opened:
    // ntfs_device_free never meets an open device.
    if (device != nullptr) ntfs_device_free(device);
}

Device::Device(std::unique_ptr<Window> window) : window_(std::move(window)) {
    const std::string& path = window_->file != nullptr ? window_->file->path() : window_->image->path();
    const std::string name = path + "@" + std::to_string(window_->offset);
    device_.reset(ntfs_device_alloc(name.c_str(), 0, &DeviceOperations::table, window_.get()));
    if (!device_) throw Error(ErrorKind::Internal, "cannot allocate an ntfs device");
}

Device::Device(const DiskImage& image, std::uint64_t offset, std::uint64_t length)
    : Device(std::make_unique<Window>(Window{&image, nullptr, offset, length})) {}

Device::Device(WritableDisk& file, std::uint64_t offset, std::uint64_t length)
    : Device(std::make_unique<Window>(Window{nullptr, &file, offset, length})) {}

Device::~Device() = default;
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;

bool Device::writable() const noexcept { return window_->file != nullptr; }

}  // namespace guestfrag::ntfs
