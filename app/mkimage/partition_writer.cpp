// SPDX-License-Identifier: GPL-2.0-or-later
// The generator's only use of libparted: every PedDevice/PedDisk/PedConstraint is owned by a
// unique_ptr, and libparted's exception handler is swapped for one that never prompts and
// records messages for the Error we throw.
#include "app/mkimage/partition_writer.hpp"

#include <parted/parted.h>

#include <memory>
#include <string>

#include "core/error.hpp"

namespace guestfrag::mkimage {

namespace {

struct DeviceDeleter {
    void operator()(PedDevice* d) const noexcept { ped_device_destroy(d); }
};
struct DiskDeleter {
    void operator()(PedDisk* d) const noexcept { ped_disk_destroy(d); }
};
struct ConstraintDeleter {
    void operator()(PedConstraint* c) const noexcept { ped_constraint_destroy(c); }
};
struct GeometryDeleter {
    void operator()(PedGeometry* g) const noexcept { ped_geometry_destroy(g); }
};
struct PartitionDeleter {
    void operator()(PedPartition* p) const noexcept { ped_partition_destroy(p); }
};

// libparted calls the handler from deep inside; it has no user pointer, so the messages of
// the current call go to a thread-local buffer.
thread_local std::string g_messages;

PedExceptionOption record_exception(PedException* ex) {
    if (ex->type >= PED_EXCEPTION_ERROR) {
        if (!g_messages.empty()) g_messages += "; ";
        g_messages += ex->message;
        if (ex->options & PED_EXCEPTION_CANCEL) return PED_EXCEPTION_CANCEL;
        return PED_EXCEPTION_UNHANDLED;
    }
    // Warnings and information (alignment hints and the like) on a disk we are creating:
    // go on, as parted's script mode does.
    if (ex->options & PED_EXCEPTION_IGNORE) return PED_EXCEPTION_IGNORE;
    if (ex->options & PED_EXCEPTION_OK) return PED_EXCEPTION_OK;
    if (ex->options & PED_EXCEPTION_YES) return PED_EXCEPTION_YES;
    return PED_EXCEPTION_UNHANDLED;
}

/// Installs record_exception for its lifetime and restores the previous handler.
class ExceptionScope {
public:
    ExceptionScope() : previous_(ped_exception_get_handler()) {
        g_messages.clear();
        ped_exception_set_handler(record_exception);
    }
    ~ExceptionScope() { ped_exception_set_handler(previous_); }
    ExceptionScope(const ExceptionScope&) = delete;
    ExceptionScope& operator=(const ExceptionScope&) = delete;

    [[noreturn]] static void fail(const std::string& what) {
        std::string message = "libparted: " + what;
        if (!g_messages.empty()) message += ": " + g_messages;
        // libparted messages can span lines; our errors are one line.
        for (char& c : message)
            if (c == '\n') c = ' ';
        throw Error(ErrorKind::Io, message);
    }

private:
    PedExceptionHandler* previous_;
};

}  // namespace

void write_partition_table(const std::filesystem::path& disk, const std::string& table,
                           const DiskLayout& layout) {
    ExceptionScope scope;
    std::unique_ptr<PedDevice, DeviceDeleter> device(ped_device_get(disk.c_str()));
    if (!device) ExceptionScope::fail("cannot open the disk file");
    if (device->sector_size != static_cast<long long>(kSectorSize))
        ExceptionScope::fail("unexpected sector size");
    PedDiskType* type = ped_disk_type_get(table.c_str());
    if (type == nullptr) ExceptionScope::fail("no '" + table + "' label type");
    std::unique_ptr<PedDisk, DiskDeleter> label(ped_disk_new_fresh(device.get(), type));
    if (!label) ExceptionScope::fail("cannot create the partition table");

    const auto start = static_cast<PedSector>(layout.volume_offset / kSectorSize);
    const auto end = static_cast<PedSector>((layout.volume_offset + layout.volume_length) / kSectorSize - 1);
    // "ntfs" is what makes libparted write msdos system id 0x07 and the GPT basic-data GUID.
    const PedFileSystemType* ntfs = ped_file_system_type_get("ntfs");
    if (ntfs == nullptr) ExceptionScope::fail("no ntfs file system type");
    std::unique_ptr<PedPartition, PartitionDeleter> part(
        ped_partition_new(label.get(), PED_PARTITION_NORMAL, ntfs, start, end));
    if (!part) ExceptionScope::fail("cannot describe the partition");
    if (!ped_partition_set_system(part.get(), ntfs)) ExceptionScope::fail("cannot set the partition type");
    // Windows names its GPT data partitions so; tools show the name as the description.
    if (ped_disk_type_check_feature(type, PED_DISK_TYPE_PARTITION_NAME) &&
        !ped_partition_set_name(part.get(), "Basic data partition"))
        ExceptionScope::fail("cannot name the partition");
    std::unique_ptr<PedGeometry, GeometryDeleter> geometry(
        ped_geometry_new(device.get(), start, end - start + 1));
    if (!geometry) ExceptionScope::fail("bad partition geometry");
    // Exact: the volume was sized for these sectors, so libparted must not "align" them.
    std::unique_ptr<PedConstraint, ConstraintDeleter> exact(ped_constraint_exact(geometry.get()));
    if (!exact) ExceptionScope::fail("cannot build a constraint");
    if (!ped_disk_add_partition(label.get(), part.get(), exact.get()))
        ExceptionScope::fail("cannot add the partition");
    part.release();  // the disk owns it now
    if (!ped_disk_commit_to_dev(label.get())) ExceptionScope::fail("cannot write the partition table");
}

}  // namespace guestfrag::mkimage
