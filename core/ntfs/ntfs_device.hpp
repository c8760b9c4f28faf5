// SPDX-License-Identifier: GPL-2.0-or-later
// The one libntfs-3g device: ntfs_device_operations over a window of a disk, the adapter of
// the image seam (DiskImage for reading, WritableDisk for the programs that write).
#pragma once

#include <cstdint>
#include <memory>

struct ntfs_device;

namespace guestfrag {

class DiskImage;
class WritableDisk;

namespace ntfs {

struct DeviceOperations;

/// A libntfs-3g device that serves disk bytes [offset, offset + length) as the whole
/// volume. Made over a DiskImage it is read-only: libntfs-3g's writes fail with EROFS, so
/// analysis can never write an image. Only a device made over a WritableDisk writes.
/// The disk must outlive the device. The device owns its ntfs_device until a mount takes it
/// over (release()); the window the operations work on stays here, so the Device must
/// outlive the mounted volume (Volume keeps both). Move-only.
class Device {
public:
    /// Read-only device. Throws Error(Internal) when libntfs-3g cannot allocate it.
    Device(const DiskImage& image, std::uint64_t offset, std::uint64_t length);
    /// Writable device. Throws Error(Internal) when libntfs-3g cannot allocate it.
    Device(WritableDisk& file, std::uint64_t offset, std::uint64_t length);
    ~Device();
    Device(Device&&) noexcept;
    Device& operator=(Device&&) noexcept;

    /// The libntfs-3g device, or nullptr once released.
    [[nodiscard]] ntfs_device* get() const noexcept { return device_.get(); }
    [[nodiscard]] bool writable() const noexcept;
    /// Hands the ntfs_device over to a successful mount, whose ntfs_umount frees it.
    ntfs_device* release() noexcept { return device_.release(); }

private:
    friend struct DeviceOperations;
    struct Window;
    struct Free {
        void operator()(ntfs_device* device) const noexcept;
    };

    explicit Device(std::unique_ptr<Window> window);

    std::unique_ptr<Window> window_;  // declared first: outlives the device that points at it
    std::unique_ptr<ntfs_device, Free> device_;
};

/// Whether the volume bytes [to, to + length) of `dev` hold already what [from, from +
/// length) hold: `dev` is a writable Device whose disk says so (WritableDisk::copied_ahead,
/// which then takes them as written) and no change it caches touches either range.
[[nodiscard]] bool copied_ahead(ntfs_device* dev, std::uint64_t to, std::uint64_t from, std::uint64_t length);

}  // namespace ntfs
}  // namespace guestfrag
