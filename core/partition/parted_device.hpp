// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

// The one place that knows how libparted is wired to our DiskImage.
//
// libparted opens devices by path and dispatches all device I/O through its exported
// architecture table (`ped_architecture->dev_ops`). We install an adapter table that
// serves registered synthetic paths ("/guestfrag-image/<n>") from a DiskImage and hands
// every other path to libparted's original table, so libparted reads the guest disk
// through the DiskImage seam and never sees a host file.
//
// libparted keeps process-wide state (device cache, exception handler and its "fetch"
// mode), so every use of it goes through parted_lock().

#include <parted/parted.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace guestfrag {

class DiskImage;

namespace parted {

/// Serialises all libparted calls in the process and makes sure the device adapter and
/// our exception handler are installed (once, on first call). Hold it for as long as any
/// PedDevice/PedDisk is alive. Throws Error(Internal) when libparted's architecture table
/// does not look like the one the adapter was written for (parted 3.x).
[[nodiscard]] std::unique_lock<std::mutex> parted_lock();

/// One message libparted raised through its exception mechanism.
struct Message {
    PedExceptionType type = PED_EXCEPTION_INFORMATION;
    PedExceptionOption options = PED_EXCEPTION_UNHANDLED;  ///< the answers libparted offered
    PedExceptionOption answer = PED_EXCEPTION_UNHANDLED;   ///< what our handler chose
    std::string text;                                      ///< squashed to one line
};

/// Messages recorded on this thread since the last take_messages()/clear_messages().
/// Our handler never prompts or prints: it records the message and answers IGNORE when
/// offered, else OK, else NO, else CANCEL (never FIX/YES/RETRY: nothing is written).
[[nodiscard]] std::vector<Message> take_messages();
void clear_messages();

/// True when libparted, by offering FIX or OK, declared the problem repairable or worked
/// around (e.g. "the backup GPT table is corrupt, but the primary appears OK"), so the
/// result it went on with is trustworthy. Errors it could only IGNORE or CANCEL are not.
[[nodiscard]] bool is_benign(const Message& message) noexcept;

/// Deleter calling ped_device_destroy (which also ends a registered device's adapter state).
struct DeviceDeleter {
    void operator()(PedDevice* device) const noexcept;
};
/// Deleter calling ped_disk_destroy.
struct DiskDeleter {
    void operator()(PedDisk* disk) const noexcept;
};
using DevicePtr = std::unique_ptr<PedDevice, DeviceDeleter>;
using DiskPtr = std::unique_ptr<PedDisk, DiskDeleter>;

/// Makes `image` visible to libparted under a unique synthetic path for the lifetime of
/// this object. Does not own the image (it must outlive the registration and every
/// PedDevice opened from it). Not copyable or movable: the registry keys on its address.
class ImageRegistration {
public:
    /// Registers `image`; installs the adapter first if needed (see parted_lock()).
    explicit ImageRegistration(const DiskImage& image);
    ~ImageRegistration();
    ImageRegistration(const ImageRegistration&) = delete;
    ImageRegistration& operator=(const ImageRegistration&) = delete;

    /// The path to give libparted (ped_device_get).
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

/// Opens the registered image as a libparted device (ped_device_get through the adapter):
/// model "guestfrag image", PED_DEVICE_FILE, 512-byte sectors, read-only. Call with
/// parted_lock() held. Throws Error(Corrupt) with libparted's message when it refuses, or
/// Error(Internal) when the device did not come from the adapter (libparted changed).
[[nodiscard]] DevicePtr open_device(const ImageRegistration& registration);

/// RAII ped_device_open / ped_device_close pair (libparted requires an open device for
/// ped_geometry_read and file system probes). Throws Error(Corrupt) when opening fails.
class DeviceOpen {
public:
    explicit DeviceOpen(PedDevice* device);
    ~DeviceOpen();
    DeviceOpen(const DeviceOpen&) = delete;
    DeviceOpen& operator=(const DeviceOpen&) = delete;

private:
    PedDevice* device_;
};

/// The text of the first message of type ERROR or worse, else the first message at all,
/// else `fallback`: what to put into an Error when a libparted call failed.
[[nodiscard]] std::string failure_text(const std::vector<Message>& messages, const std::string& fallback);

/// Whether `device` is served by the adapter (as opposed to libparted's own table).
[[nodiscard]] bool is_image_device(const PedDevice* device) noexcept;

}  // namespace parted
}  // namespace guestfrag
