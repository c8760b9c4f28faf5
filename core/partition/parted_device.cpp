// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/partition/parted_device.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <new>
#include <set>
#include <span>
#include <string_view>
#include <utility>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"

// libparted's architecture table. Its definition lives in libparted/architecture.h, which
// parted does not install; the layout below is the one of parted 3.x (two pointers, disk
// ops first). install() checks that both pointers lead to libparted's own functions before
// trusting it, and tests/unit/partition_test.cpp pins the routing end to end.
struct GuestfragPedArchitecture {
    PedDiskArchOps* disk_ops;
    PedDeviceArchOps* dev_ops;
};
extern "C" {
extern const GuestfragPedArchitecture* ped_architecture;
}

/// Defined by the partition fuzzer only, to turn a libparted assertion into a crash that
/// libFuzzer records with its input (an exit would leave no trace of the input).
extern "C" void guestfrag_on_parted_assertion() __attribute__((weak));

namespace guestfrag::parted {

namespace {

constexpr std::string_view path_prefix = "/guestfrag-image/";
constexpr long long sector_bytes = 512;

/// What a registered device's arch_specific points at.
struct ImageDeviceState {
    const DiskImage* image;
};

// --- registry of images and of the PedDevices the adapter made ---------------------

std::mutex registry_mutex;
std::map<std::string, const DiskImage*, std::less<>> registered_images;
std::set<const PedDevice*> image_devices;
std::atomic<unsigned long long> next_image_id{1};

const DiskImage* find_image(std::string_view path) {
    std::lock_guard guard(registry_mutex);
    const auto it = registered_images.find(path);
    return it == registered_images.end() ? nullptr : it->second;
}

bool is_ours(const PedDevice* device) noexcept {
    std::lock_guard guard(registry_mutex);
    return image_devices.count(device) != 0;
}

// --- messages ------------------------------------------------------------------------

thread_local std::vector<Message> recorded_messages;
/// The image libparted is reading on this thread, for the one line printed if libparted
/// fails one of its own assertions.
thread_local std::string assertion_subject;

/// One line, no synthetic device paths (they mean nothing to a user), lower-case start.
std::string squash(const char* raw) {
    std::string text;
    if (raw == nullptr) return text;
    bool pending_space = false;
    for (const char* p = raw; *p != '\0'; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (std::isspace(c) != 0) {
            pending_space = !text.empty();
            continue;
        }
        if (pending_space) text += ' ';
        pending_space = false;
        text += static_cast<char>(c);
    }
    for (std::size_t at = text.find(path_prefix); at != std::string::npos; at = text.find(path_prefix, at)) {
        std::size_t end = at + path_prefix.size();
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) ++end;
        text.replace(at, end - at, "the disk");
    }
    // "Can't have ..." -> "can't have ...", but keep acronyms such as "GPT ..." intact.
    if (text.size() >= 2 && std::isupper(static_cast<unsigned char>(text[0])) != 0 &&
        std::isupper(static_cast<unsigned char>(text[1])) == 0) {
        text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    }
    return text;
}

PedExceptionOption choose_answer(PedExceptionOption offered) noexcept {
    const auto has = [offered](PedExceptionOption option) { return (offered & option) != 0; };
    // IGNORE keeps reading so the caller can judge the result itself; OK accepts the
    // workaround libparted proposes; NO declines changes. FIX, YES and RETRY would write
    // to or re-probe the disk, which an analysis must never do.
    if (has(PED_EXCEPTION_IGNORE)) return PED_EXCEPTION_IGNORE;
    if (has(PED_EXCEPTION_OK)) return PED_EXCEPTION_OK;
    if (has(PED_EXCEPTION_NO)) return PED_EXCEPTION_NO;
    if (has(PED_EXCEPTION_CANCEL)) return PED_EXCEPTION_CANCEL;
    return PED_EXCEPTION_UNHANDLED;
}

PedExceptionOption record_exception(PedException* exception) {
    if (exception == nullptr) return PED_EXCEPTION_UNHANDLED;
    if (exception->type == PED_EXCEPTION_BUG) {
        // A failed libparted assertion: libparted calls abort() as soon as this returns,
        // and no answer prevents it. table_guard refuses the tables known to get here; for
        // any other, end the way bad input ends (one line, exit status 2) rather than with
        // a bare SIGABRT.
        std::fprintf(stderr, "guestfrag: error: %s: libparted cannot read this partition table (%s)\n",
                     assertion_subject.empty() ? "disk image" : assertion_subject.c_str(),
                     squash(exception->message).c_str());
        std::fflush(stderr);
        if (guestfrag_on_parted_assertion != nullptr) guestfrag_on_parted_assertion();
        std::_Exit(2);
    }
    const PedExceptionOption answer = choose_answer(exception->options);
    try {
        recorded_messages.push_back(
            Message{exception->type, exception->options, answer, squash(exception->message)});
    } catch (...) {
        // Out of memory while recording: the answer still stands, the text is lost.
    }
    return answer;
}

/// Raises a libparted exception from inside an adapter callback (which must not throw C++
/// exceptions through libparted's C frames).
void raise_ped_error(const char* text) noexcept {
    ped_exception_throw(PED_EXCEPTION_ERROR, PED_EXCEPTION_CANCEL, "%s", text);
}

// --- the adapter's device operations ---------------------------------------------------

/// libparted's own tables, copied at install time; ordinary paths go there.
PedDeviceArchOps original_dev_ops{};
struct _PedDiskArchOps original_disk_ops {};

PedDevice* adapter_new(const char* path) {
    if (path == nullptr || std::string_view(path).substr(0, path_prefix.size()) != path_prefix)
        return original_dev_ops._new(path);

    const DiskImage* image = find_image(path);
    if (image == nullptr) {
        ped_exception_throw(PED_EXCEPTION_ERROR, PED_EXCEPTION_CANCEL, "no disk image is registered as %s",
                            path);
        return nullptr;
    }
    auto* device = static_cast<PedDevice*>(std::calloc(1, sizeof(PedDevice)));
    auto* state = new (std::nothrow) ImageDeviceState{image};
    char* model = strdup("guestfrag image");
    char* device_path = strdup(path);
    if (device == nullptr || state == nullptr || model == nullptr || device_path == nullptr) {
        std::free(device);
        delete state;
        std::free(model);
        std::free(device_path);
        raise_ped_error("out of memory");
        return nullptr;
    }
    device->model = model;
    device->path = device_path;
    device->type = PED_DEVICE_FILE;
    device->sector_size = sector_bytes;
    device->phys_sector_size = sector_bytes;
    // Bytes past the last whole sector are not addressable by libparted (a tail shorter
    // than 512 bytes cannot hold anything a partition table can point to).
    device->length = static_cast<PedSector>(image->size() / sector_bytes);
    device->read_only = 1;
    // The conventional LBA-translated geometry; msdos_read re-derives it from the table.
    constexpr int heads = 255;
    constexpr int sectors = 63;
    const PedSector cylinders = device->length / (heads * sectors);
    const int clamped =
        static_cast<int>(std::clamp<PedSector>(cylinders, 1, std::numeric_limits<int>::max()));
    device->bios_geom = PedCHSGeometry{clamped, heads, sectors};
    device->hw_geom = device->bios_geom;
    device->arch_specific = state;
    try {
        std::lock_guard guard(registry_mutex);
        image_devices.insert(device);
    } catch (...) {
        std::free(device->model);
        std::free(device->path);
        delete state;
        std::free(device);
        raise_ped_error("out of memory");
        return nullptr;
    }
    return device;
}

void adapter_destroy(PedDevice* device) {
    if (!is_ours(device)) return original_dev_ops.destroy(device);
    {
        std::lock_guard guard(registry_mutex);
        image_devices.erase(device);
    }
    delete static_cast<ImageDeviceState*>(device->arch_specific);
    std::free(device->model);
    std::free(device->path);
    std::free(device);
}

int adapter_is_busy(PedDevice* device) { return is_ours(device) ? 0 : original_dev_ops.is_busy(device); }
int adapter_open(PedDevice* device) { return is_ours(device) ? 1 : original_dev_ops.open(device); }
int adapter_refresh_open(PedDevice* device) {
    return is_ours(device) ? 1 : original_dev_ops.refresh_open(device);
}
int adapter_close(PedDevice* device) { return is_ours(device) ? 1 : original_dev_ops.close(device); }
int adapter_refresh_close(PedDevice* device) {
    return is_ours(device) ? 1 : original_dev_ops.refresh_close(device);
}

/// Serves libparted's sector reads from the DiskImage. Never lets a C++ exception cross
/// into libparted: failures become a libparted exception (recorded by our handler) and 0.
int read_image(const PedDevice* device, void* buffer, PedSector start, PedSector count) noexcept {
    const auto* state = static_cast<const ImageDeviceState*>(device->arch_specific);
    constexpr PedSector max_sectors = std::numeric_limits<PedSector>::max() / sector_bytes;
    if (start < 0 || count < 0 || start > max_sectors || count > max_sectors - start) {
        raise_ped_error("invalid sector range requested");
        return 0;
    }
    try {
        const auto bytes = static_cast<std::size_t>(count * sector_bytes);
        state->image->read(static_cast<std::uint64_t>(start) * sector_bytes,
                           std::span<std::byte>(static_cast<std::byte*>(buffer), bytes));
        return 1;
    } catch (const std::exception& e) {
        raise_ped_error(e.what());
    } catch (...) {
        raise_ped_error("unknown failure while reading the disk image");
    }
    return 0;
}

int adapter_read(const PedDevice* device, void* buffer, PedSector start, PedSector count) {
    if (!is_ours(device)) return original_dev_ops.read(device, buffer, start, count);
    return read_image(device, buffer, start, count);
}

int adapter_write(PedDevice* device, const void* buffer, PedSector start, PedSector count) {
    if (!is_ours(device)) return original_dev_ops.write(device, buffer, start, count);
    raise_ped_error("disk images are opened read-only");
    return 0;
}

int adapter_sync(PedDevice* device) { return is_ours(device) ? 1 : original_dev_ops.sync(device); }
int adapter_sync_fast(PedDevice* device) { return is_ours(device) ? 1 : original_dev_ops.sync_fast(device); }

PedSector adapter_check(PedDevice* device, void* buffer, PedSector start, PedSector count) {
    if (!is_ours(device)) return original_dev_ops.check(device, buffer, start, count);
    // "check" reports how many sectors read back fine; an image either reads or fails.
    return read_image(device, buffer, start, count) != 0 ? count : 0;
}

void adapter_probe_all() { original_dev_ops.probe_all(); }

PedAlignment* adapter_minimum_alignment(const PedDevice* device) {
    if (is_ours(device) || original_dev_ops.get_minimum_alignment == nullptr) return nullptr;
    return original_dev_ops.get_minimum_alignment(device);
}

PedAlignment* adapter_optimum_alignment(const PedDevice* device) {
    if (is_ours(device) || original_dev_ops.get_optimum_alignment == nullptr) return nullptr;
    return original_dev_ops.get_optimum_alignment(device);
}

// --- the adapter's disk operations (OS-side: partition device nodes, kernel re-read) -----

char* adapter_partition_get_path(const PedPartition* part) {
    if (!is_ours(part->disk->dev)) return original_disk_ops.partition_get_path(part);
    // No device nodes exist for image partitions; name them like the kernel would.
    const std::string name = std::string(part->disk->dev->path) + "p" + std::to_string(part->num);
    return strdup(name.c_str());
}

int adapter_partition_is_busy(const PedPartition* part) {
    return is_ours(part->disk->dev) ? 0 : original_disk_ops.partition_is_busy(part);
}

int adapter_disk_commit(PedDisk* disk) {
    if (!is_ours(disk->dev)) return original_disk_ops.disk_commit(disk);
    raise_ped_error("disk images are opened read-only");
    return 0;
}

PedDeviceArchOps adapter_dev_ops{};
struct _PedDiskArchOps adapter_disk_ops {};
GuestfragPedArchitecture adapter_architecture{};

// --- installation ------------------------------------------------------------------------

/// Whether two function addresses lie in the same loaded object (dladdr).
bool same_object(const void* a, const void* b) {
    Dl_info info_a{};
    Dl_info info_b{};
    if (dladdr(a, &info_a) == 0 || dladdr(b, &info_b) == 0) return false;
    return info_a.dli_fbase == info_b.dli_fbase;
}

template <typename F>
const void* address_of(F* function) {
    return reinterpret_cast<const void*>(function);
}

/// Installs the adapter; returns "" on success or why the table looked wrong.
std::string install() {
    const GuestfragPedArchitecture* original = ped_architecture;
    if (original == nullptr || original->dev_ops == nullptr || original->disk_ops == nullptr)
        return "libparted's architecture table is not set up";
    const PedDeviceArchOps& dev = *original->dev_ops;
    const auto& disk = *original->disk_ops;
    if (dev._new == nullptr || dev.destroy == nullptr || dev.is_busy == nullptr || dev.open == nullptr ||
        dev.refresh_open == nullptr || dev.close == nullptr || dev.refresh_close == nullptr ||
        dev.read == nullptr || dev.write == nullptr || dev.sync == nullptr || dev.sync_fast == nullptr ||
        dev.check == nullptr || dev.probe_all == nullptr || disk.partition_get_path == nullptr ||
        disk.partition_is_busy == nullptr || disk.disk_commit == nullptr) {
        return "libparted's device operations table has empty entries";
    }
    // If parted ever reorders or extends its private architecture struct, these pointers
    // stop leading into libparted's own code: refuse rather than call through garbage.
    const void* anchor = address_of(&ped_device_read);
    if (!same_object(address_of(dev._new), anchor) || !same_object(address_of(dev.read), anchor) ||
        !same_object(address_of(disk.disk_commit), anchor)) {
        return "libparted's architecture table does not have the expected layout";
    }
    original_dev_ops = dev;
    original_disk_ops = disk;

    adapter_dev_ops._new = adapter_new;
    adapter_dev_ops.destroy = adapter_destroy;
    adapter_dev_ops.is_busy = adapter_is_busy;
    adapter_dev_ops.open = adapter_open;
    adapter_dev_ops.refresh_open = adapter_refresh_open;
    adapter_dev_ops.close = adapter_close;
    adapter_dev_ops.refresh_close = adapter_refresh_close;
    adapter_dev_ops.read = adapter_read;
    adapter_dev_ops.write = adapter_write;
    adapter_dev_ops.sync = adapter_sync;
    adapter_dev_ops.sync_fast = adapter_sync_fast;
    adapter_dev_ops.check = adapter_check;
    adapter_dev_ops.probe_all = adapter_probe_all;
    adapter_dev_ops.get_minimum_alignment = adapter_minimum_alignment;
    adapter_dev_ops.get_optimum_alignment = adapter_optimum_alignment;
    adapter_disk_ops.partition_get_path = adapter_partition_get_path;
    adapter_disk_ops.partition_is_busy = adapter_partition_is_busy;
    adapter_disk_ops.disk_commit = adapter_disk_commit;
    adapter_architecture.disk_ops = &adapter_disk_ops;
    adapter_architecture.dev_ops = &adapter_dev_ops;
    ped_architecture = &adapter_architecture;

    // libparted's default handler prints and may prompt on a terminal; ours only records.
    ped_exception_set_handler(record_exception);
    return {};
}

std::mutex parted_mutex;

void ensure_installed() {
    static std::once_flag once;
    static std::string failure;
    std::call_once(once, [] {
        // Installation swaps a global libparted pointer: no libparted call may run meanwhile.
        std::lock_guard guard(parted_mutex);
        failure = install();
    });
    if (!failure.empty()) throw Error(ErrorKind::Internal, failure);
}

}  // namespace

std::unique_lock<std::mutex> parted_lock() {
    ensure_installed();
    return std::unique_lock(parted_mutex);
}

std::vector<Message> take_messages() { return std::exchange(recorded_messages, {}); }

void clear_messages() { recorded_messages.clear(); }

bool is_benign(const Message& message) noexcept {
    if (message.type < PED_EXCEPTION_ERROR) return true;
    return (message.options & (PED_EXCEPTION_FIX | PED_EXCEPTION_OK)) != 0;
}

std::string failure_text(const std::vector<Message>& messages, const std::string& fallback) {
    for (const auto& m : messages)
        if (m.type >= PED_EXCEPTION_ERROR && !m.text.empty()) return m.text;
    for (const auto& m : messages)
        if (!m.text.empty()) return m.text;
    return fallback;
}

bool is_image_device(const PedDevice* device) noexcept { return device != nullptr && is_ours(device); }

void DeviceDeleter::operator()(PedDevice* device) const noexcept {
    if (device != nullptr) ped_device_destroy(device);
}

void DiskDeleter::operator()(PedDisk* disk) const noexcept {
    if (disk != nullptr) ped_disk_destroy(disk);
}

ImageRegistration::ImageRegistration(const DiskImage& image) {
    ensure_installed();
    path_ = std::string(path_prefix) + std::to_string(next_image_id++);
    std::lock_guard guard(registry_mutex);
    registered_images.emplace(path_, &image);
    assertion_subject = image.path();
}

ImageRegistration::~ImageRegistration() {
    std::lock_guard guard(registry_mutex);
    registered_images.erase(path_);
    assertion_subject.clear();
}

DevicePtr open_device(const ImageRegistration& registration) {
    PedDevice* device = ped_device_get(registration.path().c_str());
    if (device == nullptr)
        throw Error(ErrorKind::Corrupt,
                    failure_text(take_messages(), "libparted cannot open the disk image"));
    DevicePtr owned(device);
    if (!is_image_device(device)) {
        throw Error(ErrorKind::Internal,
                    "libparted did not route the disk image through the guestfrag device adapter");
    }
    return owned;
}

DeviceOpen::DeviceOpen(PedDevice* device) : device_(device) {
    if (ped_device_open(device_) == 0)
        throw Error(ErrorKind::Corrupt,
                    failure_text(take_messages(), "libparted cannot open the disk image"));
}

DeviceOpen::~DeviceOpen() { ped_device_close(device_); }

}  // namespace guestfrag::parted
