// SPDX-License-Identifier: GPL-2.0-or-later
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/partition/parted_device.hpp"
#include "core/partition/partition.hpp"
#include "core/partition/table_guard.hpp"

namespace guestfrag {

namespace {

constexpr std::uint64_t sector_size = 512;

/// An NTFS boot sector: OEM id "NTFS    " at byte 3 and the 0x55 0xAA end marker.
bool is_ntfs_boot_sector(const std::array<std::byte, sector_size>& sector) {
    constexpr std::string_view oem = "NTFS    ";
    for (std::size_t i = 0; i < oem.size(); ++i)
        if (sector[3 + i] != static_cast<std::byte>(oem[i])) return false;
    return sector[510] == std::byte{0x55} && sector[511] == std::byte{0xAA};
}

/// File system of a partition libparted could not name. libparted gives up when several
/// probes match equally well, which happens on disks reused without wiping: a stale ext2 or
/// UFS superblock survives inside NTFS's 8 KiB boot area (DFTT image #10 is built that way).
/// The NTFS boot sector at the partition's first sector is authoritative for Windows, so
/// it decides for us.
std::string fallback_filesystem(const DiskImage& image, std::uint64_t start) {
    std::array<std::byte, sector_size> sector{};
    try {
        image.read(start, sector);
    } catch (const Error&) {
        return {};  // unreadable start: unknown, the NTFS layer reports the details later
    }
    return is_ntfs_boot_sector(sector) ? "ntfs" : "";
}

PartitionTable whole_disk(std::uint64_t size, std::string filesystem) {
    PartitionTable table;
    table.label = "none";
    table.partitions.push_back(Partition{0, 0, size, "whole-disk", std::move(filesystem)});
    return table;
}

/// File system libparted finds on the whole device, or "" (ambiguous or nothing).
std::string probe_whole_device(PedDevice* device) {
    PedGeometry* geometry = ped_geometry_new(device, 0, device->length);
    if (geometry == nullptr) return {};
    const PedFileSystemType* fs = ped_file_system_probe(geometry);
    ped_geometry_destroy(geometry);
    return fs != nullptr ? fs->name : "";
}

std::string partition_type(const PedPartition* part, std::string_view label) {
    if (label == "gpt") return "gpt";
    return (part->type & PED_PARTITION_LOGICAL) != 0 ? "logical" : "primary";
}

/// The table as libparted reads it, with the messages it raised on the way; a bare NTFS
/// volume is one whole-disk partition.
std::pair<PartitionTable, std::vector<parted::Message>> read_with_libparted(const DiskImage& image, bool ntfs_at_start) {
    const std::uint64_t size = image.size();
    const auto lock = parted::parted_lock();
    const parted::ImageRegistration registration(image);
    parted::clear_messages();
    const parted::DevicePtr device = parted::open_device(registration);

    const PedDiskType* type = ped_disk_probe(device.get());
    const std::string label = type != nullptr ? type->name : "";
    if (label != "msdos" && label != "gpt") {
        // A bare NTFS volume: msdos_probe deliberately rejects NTFS boot sectors, and
        // libparted then calls the disk a "loop" label (one partition = whole device).
        if (ntfs_at_start) return {whole_disk(size, "ntfs"), {}};
        if (label == "loop") {
            const std::string fs = probe_whole_device(device.get());
            if (fs == "ntfs") return {whole_disk(size, fs), {}};
            throw Error(ErrorKind::Unsupported,
                        "no partition table and no NTFS file system found (the disk holds a bare " +
                            (fs.empty() ? std::string("unknown") : fs) + " file system)");
        }
        if (!label.empty())
            throw Error(ErrorKind::Unsupported, label + " partition tables are not supported");
        throw Error(ErrorKind::Unsupported, "no partition table and no NTFS file system found");
    }

    // A GPT needs the protective MBR, both headers and both 16 KiB entry arrays, plus one
    // usable sector: 68 sectors. libparted's gpt_alloc does not check that its data area is
    // non-empty and dereferences a null disk on a smaller device (found by the partition
    // fuzzer: a 67-sector disk with a valid GPT).
    constexpr std::uint64_t kGptMinimumSectors = 1 + 2 * (1 + 16384 / sector_size) + 1;
    if (label == "gpt" && static_cast<std::uint64_t>(device->length) < kGptMinimumSectors)
        throw Error(ErrorKind::Corrupt, "gpt partition table on a disk of " + std::to_string(size) +
                                            " bytes: a GPT and its backup need at least " +
                                            std::to_string(kGptMinimumSectors * sector_size) + " bytes");

    parted::clear_messages();
    const parted::DiskPtr disk(ped_disk_new(device.get()));
    std::vector<parted::Message> messages = parted::take_messages();
    if (!disk) {
        throw Error(ErrorKind::Corrupt, label + " partition table: " +
                                            parted::failure_text(messages, "libparted cannot read it"));
    }

    PartitionTable table;
    table.label = label;
    for (PedPartition* part = ped_disk_next_partition(disk.get(), nullptr); part != nullptr;
         part = ped_disk_next_partition(disk.get(), part)) {
        // Free space and metadata are libparted's bookkeeping; the extended container only
        // holds the logical partitions, which are listed themselves.
        if (ped_partition_is_active(part) == 0 || (part->type & PED_PARTITION_EXTENDED) != 0) continue;
        Partition p;
        p.number = part->num;
        p.start = static_cast<std::uint64_t>(part->geom.start) * sector_size;
        p.length = static_cast<std::uint64_t>(part->geom.length) * sector_size;
        p.type = partition_type(part, label);
        p.filesystem = part->fs_type != nullptr ? part->fs_type->name : "";
        table.partitions.push_back(std::move(p));
    }
    return {std::move(table), std::move(messages)};
}

}  // namespace

PartitionTable read_partitions(const DiskImage& image) {
    const std::uint64_t size = image.size();
    if (size < sector_size) {
        throw Error(ErrorKind::Corrupt,
                    "disk is too small for a partition table (" + std::to_string(size) + " bytes)");
    }
    std::array<std::byte, sector_size> first_sector{};
    image.read(0, first_sector);
    const bool ntfs_at_start = is_ntfs_boot_sector(first_sector);

    // Tables libparted would abort the process on are read or refused before it sees them.
    PartitionTable table;
    std::vector<parted::Message> messages;
    if (auto gpt = table_guard::read_gpt_beyond_libparted(image, first_sector)) {
        table = std::move(*gpt);
    } else {
        table_guard::check_ebr_chain(image, first_sector);
        std::tie(table, messages) = read_with_libparted(image, ntfs_at_start);
    }
    // Checked here rather than trusting libparted: it only asks whether to ignore such a
    // partition ("can't have a partition outside the disk!"), and our handler says ignore
    // so that the error can name the partition.
    for (const Partition& p : table.partitions) {
        if (p.start + p.length > size) {
            throw Error(ErrorKind::Corrupt, "partition " + std::to_string(p.number) +
                                                " extends past the end of the disk (ends at byte " +
                                                std::to_string(p.start + p.length) + ", disk size " +
                                                std::to_string(size) + ")");
        }
    }
    // Anything else libparted could only have ignored means the table is inconsistent.
    for (const parted::Message& m : messages)
        if (!parted::is_benign(m)) throw Error(ErrorKind::Corrupt, table.label + " partition table: " + m.text);
    for (Partition& p : table.partitions)
        if (p.filesystem.empty()) p.filesystem = fallback_filesystem(image, p.start);

    std::sort(table.partitions.begin(), table.partitions.end(),
              [](const Partition& a, const Partition& b) { return a.number < b.number; });
    return table;
}

}  // namespace guestfrag
