// SPDX-License-Identifier: GPL-2.0-or-later
// Partition tables read through libparted and our device adapter, checked against The
// Sleuth Kit's mmls/fsstat (an independent reader). Disks are built here: sparse files
// whose tables libparted writes through its own (host file) device table, and byte
// buffers in memory for the adapter pin and the corruption cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/raw_image.hpp"
#include "core/partition/parted_device.hpp"
#include "core/partition/partition.hpp"
#include "support/fixtures.hpp"
#include "support/memory_image.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using test::MemoryImage;

namespace {

constexpr std::uint64_t kSector = 512;

void put_le32(std::vector<std::byte>& disk, std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i)
        disk[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(value >> (8 * i));
}

/// Writes one 16-byte MBR/EBR entry (LBA fields only; CHS left zero as modern tools allow).
void put_entry(std::vector<std::byte>& disk, std::uint64_t table_sector, int slot, std::uint8_t type,
               std::uint32_t first, std::uint32_t count) {
    const std::size_t at = table_sector * kSector + 446 + static_cast<std::size_t>(slot) * 16;
    disk[at + 4] = static_cast<std::byte>(type);
    put_le32(disk, at + 8, first);
    put_le32(disk, at + 12, count);
    disk[table_sector * kSector + 510] = std::byte{0x55};
    disk[table_sector * kSector + 511] = std::byte{0xAA};
}

/// Marks the sector as the start of an NTFS volume of `sectors` sectors, with just the
/// fields libparted's probe and ours look at (OEM id, total sectors, end marker).
void put_ntfs_boot_sector(std::vector<std::byte>& disk, std::uint64_t sector, std::uint64_t sectors) {
    const char* oem = "NTFS    ";
    const std::size_t at = sector * kSector;
    for (int i = 0; i < 8; ++i) disk[at + 3 + static_cast<std::size_t>(i)] = static_cast<std::byte>(oem[i]);
    // NTFS records one sector less than the volume: the backup boot sector lies beyond.
    for (int i = 0; i < 8; ++i)
        disk[at + 0x28 + static_cast<std::size_t>(i)] = static_cast<std::byte>((sectors - 1) >> (8 * i));
    disk[sector * kSector + 510] = std::byte{0x55};
    disk[sector * kSector + 511] = std::byte{0xAA};
}

struct SlotSpec {
    int number;
    std::string type;
    std::uint64_t start_sector;
    std::uint64_t sectors;
};

/// An MBR disk of `total` sectors with two primaries (1, 2), an extended partition (3)
/// and two logical partitions (5, 6) chained through EBRs. Returns what it laid out.
std::vector<SlotSpec> build_mbr_disk(std::vector<std::byte>& disk, std::uint64_t total) {
    disk.assign(total * kSector, std::byte{0});
    const std::uint32_t ext_start = 20480, ext_len = 20480;
    put_entry(disk, 0, 0, 0x07, 2048, 8192);
    put_entry(disk, 0, 1, 0x83, 10240, 10240);
    put_entry(disk, 0, 2, 0x05, ext_start, ext_len);
    // EBR 1 at the extended start: logical 5 at +2048, next EBR at extended-relative 10240.
    put_entry(disk, ext_start, 0, 0x07, 2048, 4096);
    put_entry(disk, ext_start, 1, 0x05, 10240, 10240);
    // EBR 2: logical 6 at +2048 from this EBR, end of chain.
    put_entry(disk, ext_start + 10240, 0, 0x83, 2048, 6144);
    put_ntfs_boot_sector(disk, 2048, 8192);
    put_ntfs_boot_sector(disk, ext_start + 2048, 4096);
    return {{1, "primary", 2048, 8192},
            {2, "primary", 10240, 10240},
            {5, "logical", ext_start + 2048, 4096},
            {6, "logical", ext_start + 10240 + 2048, 6144}};
}

struct MmlsSlot {
    std::string slot;
    std::uint64_t start = 0;   ///< bytes
    std::uint64_t length = 0;  ///< bytes
    std::string description;
};

/// Allocated, non-container volumes as The Sleuth Kit's mmls sees them (bytes), or nullopt
/// when mmls finds no partition table.
std::optional<std::vector<MmlsSlot>> mmls_volumes(const fs::path& image) {
    const auto r = test::run({"mmls", "-a", image.string()});
    if (r.status != 0) return std::nullopt;
    std::uint64_t unit = 0;
    std::smatch m;
    const std::regex units_re(R"(Units are in (\d+)-byte sectors)");
    if (std::regex_search(r.out, m, units_re)) unit = std::stoull(m[1]);
    REQUIRE(unit > 0);
    // "002:  000:000   0000000063   0000096389   0000096327   NTFS / exFAT (0x07)"
    const std::regex row_re(R"(^\s*\d+:\s+(\d+(?::\d+)?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(.*?)\s*$)");
    std::vector<MmlsSlot> slots;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (!std::regex_match(line, m, row_re)) continue;
        MmlsSlot s{m[1], std::stoull(m[2]) * unit, std::stoull(m[4]) * unit, m[5]};
        // mmls lists extended containers as volumes; libparted (and we) only their logicals.
        if (s.description.find("Extended") != std::string::npos) continue;
        slots.push_back(s);
    }
    std::sort(slots.begin(), slots.end(),
              [](const MmlsSlot& a, const MmlsSlot& b) { return a.start < b.start; });
    return slots;
}

std::vector<Partition> by_start(std::vector<Partition> parts) {
    std::sort(parts.begin(), parts.end(),
              [](const Partition& a, const Partition& b) { return a.start < b.start; });
    return parts;
}

/// Our partitions must be exactly mmls's volumes (start and length, in bytes).
void require_matches_mmls(const PartitionTable& table, const std::vector<MmlsSlot>& slots) {
    const auto ours = by_start(table.partitions);
    REQUIRE(ours.size() == slots.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
        INFO("partition " << ours[i].number << " vs mmls slot " << slots[i].slot);
        CHECK(ours[i].start == slots[i].start);
        CHECK(ours[i].length == slots[i].length);
    }
}

/// Partition numbers as libparted assigns them: primaries keep their MBR slot (1-4),
/// logicals count from 5 in chain order.
void require_dos_numbering(const PartitionTable& table) {
    int next_logical = 5;
    for (const auto& p : by_start(table.partitions)) {
        if (p.type == "logical") {
            CHECK(p.number == next_logical++);
        } else {
            CHECK(p.type == "primary");
            CHECK(p.number >= 1);
            CHECK(p.number <= 4);
        }
    }
}

fs::path fresh_file(const std::string& name, std::uint64_t bytes) {
    const fs::path path = test::scratch_dir() / (name + "." + std::to_string(::getpid()));
    fs::remove(path);
    { std::ofstream create(path, std::ios::binary); }
    fs::resize_file(path, bytes);
    return path;
}

struct PartSpec {
    PedPartitionType type;
    PedSector start;
    PedSector end;  ///< inclusive, as libparted counts
    const char* filesystem;
};

/// Writes a partition table onto a host file with libparted's own device table (the
/// adapter must pass ordinary paths through untouched for this to work at all).
void write_table_with_libparted(const fs::path& file, const char* label, const std::vector<PartSpec>& parts) {
    const auto lock = parted::parted_lock();
    parted::clear_messages();
    const parted::DevicePtr device(ped_device_get(file.c_str()));
    REQUIRE(device);
    REQUIRE_FALSE(parted::is_image_device(device.get()));
    REQUIRE(device->length == static_cast<PedSector>(fs::file_size(file) / kSector));
    const parted::DiskPtr disk(ped_disk_new_fresh(device.get(), ped_disk_type_get(label)));
    REQUIRE(disk);
    for (const auto& spec : parts) {
        const PedFileSystemType* fs_type =
            spec.filesystem ? ped_file_system_type_get(spec.filesystem) : nullptr;
        PedPartition* part = ped_partition_new(disk.get(), spec.type, fs_type, spec.start, spec.end);
        REQUIRE(part != nullptr);
        PedConstraint* exact = ped_constraint_exact(&part->geom);
        const int added = ped_disk_add_partition(disk.get(), part, exact);
        ped_constraint_destroy(exact);
        if (added == 0) ped_partition_destroy(part);
        INFO(parted::failure_text(parted::take_messages(), "no libparted message"));
        REQUIRE(added != 0);
    }
    REQUIRE(ped_disk_commit_to_dev(disk.get()) != 0);
}

ErrorKind kind_of_failure(const DiskImage& image, std::string* message = nullptr) {
    try {
        (void)read_partitions(image);
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.kind();
    }
    FAIL("read_partitions accepted the disk");
    return ErrorKind::Internal;
}

}  // namespace

TEST_CASE("libparted reads an in-memory image through the device adapter", "[partition][adapter]") {
    std::vector<std::byte> bytes;
    const auto layout = build_mbr_disk(bytes, 65536);
    const MemoryImage image(bytes);

    SECTION("the synthetic device is ours and serves the image's bytes") {
        const auto lock = parted::parted_lock();
        const parted::ImageRegistration registration(image);
        const parted::DevicePtr device = parted::open_device(registration);
        REQUIRE(parted::is_image_device(device.get()));
        CHECK(std::string(device->model) == "guestfrag image");
        CHECK(device->type == PED_DEVICE_FILE);
        CHECK(device->sector_size == 512);
        CHECK(device->length == static_cast<PedSector>(image.size() / kSector));
        CHECK(device->read_only == 1);

        const parted::DeviceOpen open(device.get());
        std::vector<std::byte> sector(kSector);
        const unsigned before = image.reads();
        REQUIRE(ped_device_read(device.get(), sector.data(), 2048, 1) != 0);
        CHECK(image.reads() == before + 1);
        CHECK(std::equal(sector.begin(), sector.end(), bytes.begin() + 2048 * kSector));

        // Read-only: a write fails cleanly with a recorded message instead of touching anything.
        parted::clear_messages();
        CHECK(ped_device_write(device.get(), sector.data(), 0, 1) == 0);
        CHECK(parted::failure_text(parted::take_messages(), "").find("read-only") != std::string::npos);

        // Reads past the end become a libparted error, not a crash or a C++ exception.
        CHECK(ped_device_read(device.get(), sector.data(), device->length, 1) == 0);
        CHECK(parted::failure_text(parted::take_messages(), "").find("past end") != std::string::npos);
    }

    SECTION("an unregistered synthetic path is refused") {
        const auto lock = parted::parted_lock();
        parted::clear_messages();
        PedDevice* device = ped_device_get("/guestfrag-image/999999999");
        CHECK(device == nullptr);
        if (device) ped_device_destroy(device);
        CHECK_FALSE(parted::take_messages().empty());
    }

    SECTION("read_partitions sees the table built in memory") {
        const unsigned before = image.reads();
        const PartitionTable table = read_partitions(image);
        CHECK(image.reads() > before);
        CHECK(table.label == "msdos");
        REQUIRE(table.partitions.size() == layout.size());
        for (std::size_t i = 0; i < layout.size(); ++i) {
            const auto& p = table.partitions[i];
            INFO("partition " << layout[i].number);
            CHECK(p.number == layout[i].number);
            CHECK(p.type == layout[i].type);
            CHECK(p.start == layout[i].start_sector * kSector);
            CHECK(p.length == layout[i].sectors * kSector);
        }
        CHECK(table.partitions[0].filesystem == "ntfs");
        CHECK(table.partitions[2].filesystem == "ntfs");
        CHECK(table.partitions[1].filesystem.empty());
    }

    SECTION("mmls reads the same bytes the same way") {
        test::require_tools({"mmls"});
        const fs::path file = test::scratch_dir() / ("memory-mbr." + std::to_string(::getpid()));
        {
            std::ofstream out(file, std::ios::binary);
            out.write(reinterpret_cast<const char*>(bytes.data()),
                      static_cast<std::streamsize>(bytes.size()));
        }
        const auto slots = mmls_volumes(file);
        fs::remove(file);
        REQUIRE(slots);
        require_matches_mmls(read_partitions(image), *slots);
    }
}

TEST_CASE("DFTT NTFS autodetect disk matches mmls and fsstat", "[partition][dftt]") {
    const fs::path disk = test::testdata("dftt-10-ntfs-disk.dd.xz");
    test::require_tools({"mmls", "fsstat"});
    const RawImage image(disk.string());
    const PartitionTable table = read_partitions(image);
    CHECK(table.label == "msdos");
    const auto slots = mmls_volumes(disk);
    REQUIRE(slots);
    require_matches_mmls(table, *slots);
    require_dos_numbering(table);

    // The partitions also hold stale ext2/UFS superblocks, so autodetection is ambiguous
    // (libparted's probe and plain fsstat both give up). We must still say NTFS exactly
    // where The Sleuth Kit, told to look for NTFS, finds a valid one at the partition start.
    test::require_tools({"fsstat"});
    for (const auto& p : table.partitions) {
        const auto r =
            test::run({"fsstat", "-f", "ntfs", "-o", std::to_string(p.start / kSector), disk.string()});
        const bool tsk_ntfs = r.status == 0 && r.out.find("File System Type: NTFS") != std::string::npos;
        INFO("partition " << p.number);
        CHECK((p.filesystem == "ntfs") == tsk_ntfs);
    }
}

TEST_CASE("partition tables written by libparted read back like mmls reads them", "[partition]") {
    test::require_tools({"mmls"});
    SECTION("msdos with an extended partition and logical partitions") {
        const fs::path file = fresh_file("libparted-msdos.img", 64ull << 20);
        write_table_with_libparted(file, "msdos",
                                   {{PED_PARTITION_NORMAL, 2048, 10239, "ntfs"},
                                    {PED_PARTITION_NORMAL, 10240, 30719, nullptr},
                                    {PED_PARTITION_EXTENDED, 30720, 129023, nullptr},
                                    {PED_PARTITION_LOGICAL, 32768, 61439, "ntfs"},
                                    {PED_PARTITION_LOGICAL, 63488, 100351, nullptr},
                                    {PED_PARTITION_LOGICAL, 102400, 129023, nullptr}});
        const RawImage image(file.string());
        const PartitionTable table = read_partitions(image);
        CHECK(table.label == "msdos");
        const auto slots = mmls_volumes(file);
        REQUIRE(slots);
        require_matches_mmls(table, *slots);
        require_dos_numbering(table);
        std::vector<int> numbers;
        for (const auto& p : table.partitions) numbers.push_back(p.number);
        CHECK(numbers == std::vector<int>{1, 2, 5, 6, 7});
        fs::remove(file);
    }
    SECTION("gpt") {
        const fs::path file = fresh_file("libparted-gpt.img", 32ull << 20);
        write_table_with_libparted(file, "gpt",
                                   {{PED_PARTITION_NORMAL, 2048, 10239, "ntfs"},
                                    {PED_PARTITION_NORMAL, 10240, 20479, nullptr},
                                    {PED_PARTITION_NORMAL, 40960, 63487, nullptr}});
        const RawImage image(file.string());
        const PartitionTable table = read_partitions(image);
        CHECK(table.label == "gpt");
        const auto slots = mmls_volumes(file);
        REQUIRE(slots);
        require_matches_mmls(table, *slots);
        for (std::size_t i = 0; i < table.partitions.size(); ++i) {
            CHECK(table.partitions[i].number == static_cast<int>(i) + 1);
            CHECK(table.partitions[i].type == "gpt");
        }
        fs::remove(file);
    }
}

TEST_CASE("partitions past the end of the disk are corrupt", "[partition][corrupt]") {
    SECTION("primary entry patched beyond the disk (in memory)") {
        std::vector<std::byte> bytes;
        build_mbr_disk(bytes, 65536);
        put_entry(bytes, 0, 1, 0x83, 10240, 100000);  // ends far past sector 65535
        std::string message;
        CHECK(kind_of_failure(MemoryImage(bytes), &message) == ErrorKind::Corrupt);
        CHECK(message.find("partition 2 extends past the end of the disk") != std::string::npos);
    }
    SECTION("logical partition beyond the disk (in memory)") {
        std::vector<std::byte> bytes;
        build_mbr_disk(bytes, 65536);
        put_entry(bytes, 0, 2, 0x05, 20480, 60000);             // extended container too long
        put_entry(bytes, 20480 + 10240, 0, 0x83, 2048, 50000);  // logical 6 runs off the disk
        std::string message;
        CHECK(kind_of_failure(MemoryImage(bytes), &message) == ErrorKind::Corrupt);
        CHECK(message.find("extends past the end of the disk") != std::string::npos);
    }
    SECTION("msdos disk truncated after partitioning") {
        const fs::path file = fresh_file("truncated-msdos.img", 32ull << 20);
        write_table_with_libparted(file, "msdos", {{PED_PARTITION_NORMAL, 2048, 63487, nullptr}});
        fs::resize_file(file, 16ull << 20);
        std::string message;
        CHECK(kind_of_failure(RawImage(file.string()), &message) == ErrorKind::Corrupt);
        CHECK(message.find("partition 1 extends past the end of the disk") != std::string::npos);
        fs::remove(file);
    }
    SECTION("gpt disk truncated after partitioning") {
        const fs::path file = fresh_file("truncated-gpt.img", 32ull << 20);
        write_table_with_libparted(file, "gpt", {{PED_PARTITION_NORMAL, 2048, 63487, nullptr}});
        fs::resize_file(file, 16ull << 20);
        std::string message;
        CHECK(kind_of_failure(RawImage(file.string()), &message) == ErrorKind::Corrupt);
        CHECK_FALSE(message.empty());
        fs::remove(file);
    }
}

TEST_CASE("disks without a partition table", "[partition]") {
    SECTION("bare NTFS boot sector in memory is one whole-disk partition") {
        std::vector<std::byte> bytes(4 << 20);
        put_ntfs_boot_sector(bytes, 0, bytes.size() / kSector);
        const MemoryImage image(bytes);
        const PartitionTable table = read_partitions(image);
        CHECK(table.label == "none");
        REQUIRE(table.partitions.size() == 1);
        CHECK(table.partitions[0].number == 0);
        CHECK(table.partitions[0].start == 0);
        CHECK(table.partitions[0].length == image.size());
        CHECK(table.partitions[0].type == "whole-disk");
        CHECK(table.partitions[0].filesystem == "ntfs");
    }
    SECTION("a volume made by mkntfs, which mmls finds no table in") {
        test::require_tools({"mkntfs", "mmls"});
        const fs::path file = fresh_file("bare-ntfs.img", (8ull << 20) + 1024);  // odd size on purpose
        REQUIRE(test::run({"mkntfs", "-F", "-q", "-Q", file.string()}).status == 0);
        CHECK_FALSE(mmls_volumes(file));
        const RawImage image(file.string());
        const PartitionTable table = read_partitions(image);
        CHECK(table.label == "none");
        REQUIRE(table.partitions.size() == 1);
        CHECK(table.partitions[0].length == fs::file_size(file));
        CHECK(table.partitions[0].filesystem == "ntfs");
        fs::remove(file);
    }
    SECTION("a volume made by Windows (dfvfs test data, converted to raw by qemu-img)") {
        const fs::path qcow = test::testdata("windows_volume.qcow2");
        test::require_tools({"qemu-img", "mmls"});
        const fs::path raw = test::scratch_dir() / ("windows_volume.raw." + std::to_string(::getpid()));
        REQUIRE(test::run({"qemu-img", "convert", "-O", "raw", qcow.string(), raw.string()}).status == 0);
        CHECK_FALSE(mmls_volumes(raw));
        const PartitionTable table = read_partitions(RawImage(raw.string()));
        CHECK(table.label == "none");
        REQUIRE(table.partitions.size() == 1);
        CHECK(table.partitions[0].filesystem == "ntfs");
        CHECK(table.partitions[0].length == fs::file_size(raw));
        fs::remove(raw);
    }
    SECTION("random bytes") {
        std::vector<std::byte> bytes(1 << 20);
        std::mt19937 rng(20240601);
        for (auto& b : bytes) b = static_cast<std::byte>(rng());
        std::string message;
        CHECK(kind_of_failure(MemoryImage(bytes), &message) == ErrorKind::Unsupported);
        CHECK(message == "no partition table and no NTFS file system found");
    }
    SECTION("all zeroes") {
        CHECK(kind_of_failure(MemoryImage(std::vector<std::byte>(1 << 20))) == ErrorKind::Unsupported);
    }
    SECTION("empty and tiny disks") {
        CHECK(kind_of_failure(MemoryImage({})) == ErrorKind::Corrupt);
        CHECK(kind_of_failure(MemoryImage(std::vector<std::byte>(100))) == ErrorKind::Corrupt);
        // One sector holding only an MBR signature and an entry pointing beyond it.
        std::vector<std::byte> one(kSector);
        put_entry(one, 0, 0, 0x07, 1, 100);
        CHECK(kind_of_failure(MemoryImage(one)) == ErrorKind::Corrupt);
    }
    SECTION("MBR signature with an invalid boot flag is no table") {
        std::vector<std::byte> bytes(1 << 20);
        put_entry(bytes, 0, 0, 0x07, 2048, 1024);
        bytes[446] = std::byte{0x42};  // boot indicator must be 0x00 or 0x80
        CHECK(kind_of_failure(MemoryImage(bytes)) == ErrorKind::Unsupported);
    }
}

TEST_CASE("read_partitions is safe to call from several threads", "[partition][threads]") {
    std::vector<std::byte> bytes;
    const auto layout = build_mbr_disk(bytes, 65536);
    const MemoryImage image(bytes);
    std::atomic<int> good{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 20; ++i) {
                try {
                    if (read_partitions(image).partitions.size() == layout.size()) ++good;
                } catch (...) {
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(good == 80);
}
