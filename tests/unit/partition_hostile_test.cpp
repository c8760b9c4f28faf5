// SPDX-License-Identifier: GPL-2.0-or-later
// Partition tables that make libparted 3.5 abort the process (a failed assertion) rather
// than return an error: a valid GPT with 0 or more than 8,192 entries, and an MBR whose
// chain of extended boot records loops. They are built here byte by byte, with a CRC-32
// written out below (independent of the zlib one the reader uses), and must give either a
// normal analysis or exit status 2 with one line.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/partition/partition.hpp"
#include "support/fixtures.hpp"
#include "support/memory_image.hpp"

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using namespace guestfrag;
using test::MemoryImage;

namespace {

constexpr std::uint64_t kSector = 512;
constexpr std::uint32_t kEntrySize = 128;

/// CRC-32 (IEEE 802.3, reflected, as UEFI specifies for GPT), bit by bit.
std::uint32_t crc32_of(const std::byte* data, std::size_t n) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i) {
        c ^= std::to_integer<std::uint32_t>(data[i]);
        for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

void put_le(std::vector<std::byte>& d, std::size_t at, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) d[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(value >> (8 * i));
}

void put_mbr_entry(std::vector<std::byte>& d, std::uint64_t sector, int slot, std::uint8_t type, std::uint32_t first,
                   std::uint32_t count) {
    const std::size_t at = sector * kSector + 446 + static_cast<std::size_t>(slot) * 16;
    d[at + 4] = static_cast<std::byte>(type);
    put_le(d, at + 8, first, 4);
    put_le(d, at + 12, count, 4);
    d[sector * kSector + 510] = std::byte{0x55};
    d[sector * kSector + 511] = std::byte{0xAA};
}

struct GptEntry {
    std::uint64_t index;  ///< slot in the entry array (partition number - 1)
    std::uint64_t first;  ///< LBAs, inclusive
    std::uint64_t last;
};

/// A protective MBR, a primary GPT header at LBA 1 with `count` entries from LBA 2, and
/// the backup header in the last sector (sharing the primary's entry array). Usable
/// sectors start at `first_usable`.
void put_gpt(std::vector<std::byte>& d, std::uint32_t count, std::uint64_t first_usable,
             const std::vector<GptEntry>& entries) {
    const std::uint64_t last = d.size() / kSector - 1;
    put_mbr_entry(d, 0, 0, 0xEE, 1, static_cast<std::uint32_t>(std::min<std::uint64_t>(last, 0xFFFFFFFFu)));
    const std::size_t array_at = 2 * kSector;
    for (const GptEntry& e : entries) {
        const std::size_t at = array_at + e.index * kEntrySize;
        d[at] = std::byte{0xA2};  // basic data partition type GUID, first byte (non-zero: used)
        d[at + 1] = std::byte{0xA0};
        d[at + 16] = static_cast<std::byte>(e.index + 1);  // unique GUID
        put_le(d, at + 32, e.first, 8);
        put_le(d, at + 40, e.last, 8);
    }
    const std::uint32_t array_crc = crc32_of(d.data() + array_at, std::size_t{count} * kEntrySize);
    for (const std::uint64_t lba : {std::uint64_t{1}, last}) {
        const std::size_t h = lba * kSector;
        std::memcpy(&d[h], "EFI PART", 8);
        put_le(d, h + 8, 0x00010000, 4);  // revision 1.0
        put_le(d, h + 12, 92, 4);
        put_le(d, h + 16, 0, 4);
        put_le(d, h + 24, lba, 8);
        put_le(d, h + 32, lba == 1 ? last : 1, 8);
        put_le(d, h + 40, first_usable, 8);
        put_le(d, h + 48, last - 1, 8);
        put_le(d, h + 72, 2, 8);
        put_le(d, h + 80, count, 4);
        put_le(d, h + 84, kEntrySize, 4);
        put_le(d, h + 88, array_crc, 4);
        put_le(d, h + 16, crc32_of(&d[h], 92), 4);
    }
}

/// Rewrites the primary header's entry count and its header CRC, as a hostile tool would.
void set_primary_count(std::vector<std::byte>& d, std::uint32_t count) {
    put_le(d, kSector + 80, count, 4);
    put_le(d, kSector + 16, 0, 4);
    put_le(d, kSector + 16, crc32_of(&d[kSector], 92), 4);
}

std::uint64_t sectors_for(std::uint32_t count) { return 2 + (std::uint64_t{count} * kEntrySize + kSector - 1) / kSector; }

std::string failure_of(const std::vector<std::byte>& bytes, ErrorKind expected) {
    try {
        (void)read_partitions(MemoryImage(bytes));
    } catch (const Error& e) {
        CHECK(e.kind() == expected);
        return e.what();
    }
    FAIL("read_partitions accepted the disk");
    return {};
}

fs::path write_file(const std::string& name, const std::vector<std::byte>& bytes) {
    const fs::path path = test::scratch_dir() / (name + "." + std::to_string(::getpid()));
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
}

}  // namespace

TEST_CASE("a valid GPT with more than 8192 entries is read, not handed to libparted", "[partition][hostile]") {
    constexpr std::uint32_t kCount = 9000;
    const std::uint64_t first_usable = sectors_for(kCount);  // 2 + 2250 = 2252
    REQUIRE(first_usable == 2252);

    SECTION("one entry used, far into the array") {
        std::vector<std::byte> d((4ull << 20), std::byte{0});
        put_gpt(d, kCount, first_usable, {{8999, 4096, 6143}});
        const PartitionTable table = read_partitions(MemoryImage(d));
        CHECK(table.label == "gpt");
        REQUIRE(table.partitions.size() == 1);
        CHECK(table.partitions[0].number == 9000);
        CHECK(table.partitions[0].start == 4096 * kSector);
        CHECK(table.partitions[0].length == 2048 * kSector);
        CHECK(table.partitions[0].type == "gpt");
        CHECK(table.partitions[0].filesystem.empty());
    }
    SECTION("all entries used, one sector each") {
        std::vector<GptEntry> entries;
        for (std::uint64_t i = 0; i < kCount; ++i) entries.push_back({i, first_usable + i, first_usable + i});
        std::vector<std::byte> d((first_usable + kCount + 1) * kSector, std::byte{0});
        put_gpt(d, kCount, first_usable, entries);
        const PartitionTable table = read_partitions(MemoryImage(d));
        REQUIRE(table.partitions.size() == kCount);
        CHECK(table.partitions.front().number == 1);
        CHECK(table.partitions.front().start == first_usable * kSector);
        CHECK(table.partitions.back().number == 9000);
        CHECK(table.partitions.back().start == (first_usable + 8999) * kSector);
        CHECK(table.partitions.back().length == kSector);
    }
    SECTION("its entry array CRC is checked") {
        std::vector<std::byte> d((4ull << 20), std::byte{0});
        put_gpt(d, kCount, first_usable, {{3, 4096, 6143}});
        d[2 * kSector + 3 * kEntrySize + 40] = std::byte{0x10};  // entry 4's last LBA changed
        CHECK(failure_of(d, ErrorKind::Corrupt) == "GPT partition entry array does not match the CRC in its header");
    }
    SECTION("an entry outside the usable sectors is corrupt") {
        std::vector<std::byte> d((4ull << 20), std::byte{0});
        put_gpt(d, kCount, first_usable, {{0, 100, 200}});
        CHECK(failure_of(d, ErrorKind::Corrupt) ==
              "GPT partition 1 (sectors 100 to 200) lies outside the usable sectors 2252 to 8190");
    }
    SECTION("an entry array past the end of the disk is corrupt") {
        std::vector<std::byte> d((4ull << 20), std::byte{0});
        put_gpt(d, kCount, first_usable, {});
        set_primary_count(d, 40000);  // 5,120,000 bytes of entries in a 4 MiB disk
        CHECK(failure_of(d, ErrorKind::Corrupt) ==
              "GPT partition entry array (40000 entries at sector 2) lies past the end of the disk");
    }
    SECTION("an absurd entry array is refused before it is read") {
        std::vector<std::byte> d((4ull << 20), std::byte{0});
        put_gpt(d, kCount, first_usable, {});
        set_primary_count(d, 0xFFFFFFFFu);
        CHECK(failure_of(d, ErrorKind::Unsupported) ==
              "GPT partition entry array of 549755813760 bytes (4294967295 entries): more than the 64 MiB guestfrag reads");
    }
}

TEST_CASE("a valid GPT with no entries is an empty table", "[partition][hostile]") {
    std::vector<std::byte> d((1ull << 20), std::byte{0});
    put_gpt(d, 0, 34, {});
    const PartitionTable table = read_partitions(MemoryImage(d));
    CHECK(table.label == "gpt");
    CHECK(table.partitions.empty());
}

TEST_CASE("an extended partition whose EBR chain loops is corrupt", "[partition][hostile]") {
    std::vector<std::byte> d((64ull << 20), std::byte{0});
    put_mbr_entry(d, 0, 0, 0x07, 2048, 8192);
    put_mbr_entry(d, 0, 1, 0x05, 20480, 40960);
    put_mbr_entry(d, 20480, 0, 0x07, 2048, 4096);
    SECTION("an EBR that links to itself") {
        put_mbr_entry(d, 20480, 1, 0x05, 0, 40960);
        CHECK(failure_of(d, ErrorKind::Corrupt) ==
              "msdos partition table: the chain of logical partitions links back to the extended boot record at "
              "sector 20480");
    }
    SECTION("two EBRs that link to each other") {
        put_mbr_entry(d, 20480, 1, 0x05, 10240, 10240);
        put_mbr_entry(d, 30720, 0, 0x07, 2048, 4096);
        put_mbr_entry(d, 30720, 1, 0x05, 0, 40960);
        CHECK(failure_of(d, ErrorKind::Corrupt) ==
              "msdos partition table: the chain of logical partitions links back to the extended boot record at "
              "sector 20480");
    }
    SECTION("logical partitions that overlap, or touch, leaving no sector for a boot record") {
        // The first logical partition runs past the second EBR (sector 30720), as in the
        // table the partition fuzzer found libparted asserting on.
        put_mbr_entry(d, 20480, 0, 0x07, 2048, 10240);
        put_mbr_entry(d, 20480, 1, 0x05, 10240, 10240);
        put_mbr_entry(d, 30720, 0, 0x07, 1, 4096);
        CHECK(failure_of(d, ErrorKind::Corrupt) ==
              "msdos partition table: the logical partitions at sectors 22528 and 30721 overlap or leave no sector "
              "for a boot record between them");
        put_mbr_entry(d, 20480, 0, 0x07, 2048, 8193);  // ends at 30720, the second logical starts at 30721
        CHECK(failure_of(d, ErrorKind::Corrupt) ==
              "msdos partition table: the logical partitions at sectors 22528 and 30721 overlap or leave no sector "
              "for a boot record between them");
        put_mbr_entry(d, 20480, 0, 0x07, 2048, 8192);  // ends at 30719: the EBR at 30720 lies between
        const PartitionTable table = read_partitions(MemoryImage(d));
        REQUIRE(table.partitions.size() == 3);
        CHECK(table.partitions[2].start == 30721 * kSector);
    }
    SECTION("the same chain without the loop reads normally") {
        put_mbr_entry(d, 20480, 1, 0x05, 10240, 10240);
        put_mbr_entry(d, 30720, 0, 0x07, 2048, 4096);
        const PartitionTable table = read_partitions(MemoryImage(d));
        REQUIRE(table.partitions.size() == 3);
        CHECK(table.partitions[1].number == 5);
        CHECK(table.partitions[2].number == 6);
        CHECK(table.partitions[2].start == (30720 + 2048) * kSector);
    }
}

TEST_CASE("the CLI analyses a volume behind a 9000-entry GPT and refuses a looping EBR chain",
          "[partition][hostile][cli]") {
    MkImageOptions o;
    o.disk_size = 16ull << 20;
    o.table = "none";
    o.files = 40;
    o.seed = 12;
    const fs::path volume = test::generated_image("hostile-gpt-volume", o);
    const std::uint64_t volume_bytes = fs::file_size(volume);
    std::vector<std::byte> bytes;
    {
        std::ifstream in(volume, std::ios::binary);
        bytes.resize(volume_bytes);
        in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(volume_bytes));
    }
    constexpr std::uint64_t kStart = 4096;  // sectors: past the 9000-entry array
    std::vector<std::byte> disk(kStart * kSector + volume_bytes + (1ull << 20), std::byte{0});
    std::copy(bytes.begin(), bytes.end(), disk.begin() + static_cast<std::ptrdiff_t>(kStart * kSector));
    put_gpt(disk, 9000, sectors_for(9000), {{4321, kStart, kStart + volume_bytes / kSector - 1}});
    const fs::path gpt = write_file("hostile-gpt9000.img", disk);

    const auto r = test::run_cli({"analyze", gpt.string(), "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    REQUIRE(doc["partitions"].size() == 1);
    CHECK(doc["partitions"][0]["number"] == 4322);
    CHECK(doc["partitions"][0]["start"] == kStart * kSector);
    CHECK(doc["partitions"][0]["filesystem"] == "ntfs");
    REQUIRE(doc["volumes"].size() == 1);
    CHECK(doc["volumes"][0]["partition"] == 4322);
    // The volume reads as it does bare: same clusters and files.
    const auto bare = test::run_cli({"analyze", volume.string(), "--json"});
    REQUIRE(bare.status == 0);
    const auto bare_doc = nlohmann::json::parse(bare.out);
    CHECK(doc["volumes"][0]["total_clusters"] == bare_doc["volumes"][0]["total_clusters"]);
    CHECK(doc["volumes"][0]["files"] == bare_doc["volumes"][0]["files"]);
    fs::remove(gpt);

    std::vector<std::byte> mbr((8ull << 20), std::byte{0});
    put_mbr_entry(mbr, 0, 0, 0x05, 2048, 8192);
    put_mbr_entry(mbr, 2048, 1, 0x05, 0, 8192);  // the first EBR links to itself
    const fs::path loop = write_file("hostile-ebr-loop.img", mbr);
    const auto refused = test::run_cli({"analyze", loop.string()});
    CHECK(refused.status == 2);
    CHECK(refused.out.empty());
    CHECK(refused.err == "guestfrag: error: " + loop.string() +
                             ": msdos partition table: the chain of logical partitions links back to the extended "
                             "boot record at sector 2048\n");
    fs::remove(loop);
}

TEST_CASE("a GPT on a disk too small for its backup is refused before libparted reads it", "[partition][hostile]") {
    // 67 sectors: protective MBR, two headers, two 128-entry arrays and no usable sector.
    // libparted 3.5 dereferences a null pointer on such a disk.
    for (const std::uint64_t sectors : {std::uint64_t{55}, std::uint64_t{67}}) {
        std::vector<std::byte> d(sectors * kSector);
        put_gpt(d, 128, 34, {});
        INFO(sectors << " sectors");
        CHECK(failure_of(d, ErrorKind::Corrupt) == "gpt partition table on a disk of " +
                                                       std::to_string(sectors * kSector) +
                                                       " bytes: a GPT and its backup need at least 34816 bytes");
    }
}

TEST_CASE("a GPT header naming an absurd entry array is refused before libparted allocates it",
          "[partition][hostile]") {
    std::vector<std::byte> d(256 * kSector);
    put_gpt(d, 128, 34, {{0, 40, 99}});
    // 32,768 entries of 32 KiB (1 GiB) at sector 594, with the header CRC left wrong:
    // libparted would allocate the gigabyte before noticing.
    put_le(d, kSector + 72, 594, 8);
    put_le(d, kSector + 80, 32768, 4);
    put_le(d, kSector + 84, 32768, 4);
    CHECK(failure_of(d, ErrorKind::Unsupported) ==
          "GPT partition entry array of 1073741824 bytes (32768 entries): more than the 64 MiB guestfrag reads");
    put_le(d, kSector + 80, 128, 4);
    CHECK(failure_of(d, ErrorKind::Corrupt) == "GPT partition entry array (128 entries at sector 594) lies past "
                                               "the end of the disk");
}

TEST_CASE("a GPT entry beyond 2^63 is refused before libparted asserts on it", "[partition][hostile]") {
    // Negative as libparted's signed sector numbers: ped_geometry_set asserts start >= 0.
    std::vector<std::byte> d(256 * kSector);
    put_gpt(d, 128, 34, {{0, 40, 99}, {5, 0xA300000000000000ull, 0xA300000000000010ull}});
    CHECK(failure_of(d, ErrorKind::Corrupt) ==
          "GPT partition 6 (sectors 11745387828182253568 to 11745387828182253584) lies outside the usable sectors "
          "34 to 254");
}

TEST_CASE("a GPT header listing no entries never reaches libparted, whatever its CRC", "[partition][hostile]") {
    // The partition fuzzer's case: libparted allocates the array of a header whose CRC is
    // wrong, and asserts in ped_malloc(0) when it lists no entries.
    std::vector<std::byte> d(219 * kSector);
    put_gpt(d, 128, 34, {{0, 40, 99}});
    put_le(d, kSector + 80, 0, 4);  // the header CRC is left as it was: now wrong
    SECTION("with no header whose CRC is right, the disk is refused") {
        std::fill_n(d.end() - kSector, kSector, std::byte{0});  // no backup header
        CHECK(failure_of(d, ErrorKind::Corrupt) ==
              "GPT header at sector 1 lists 0 partition entries and no GPT header has a correct CRC");
    }
    SECTION("with a right backup header, the table is read from it") {
        const PartitionTable table = read_partitions(MemoryImage(d));
        CHECK(table.label == "gpt");
        REQUIRE(table.partitions.size() == 1);
        CHECK(table.partitions[0].start == 40 * kSector);
        CHECK(table.partitions[0].length == 60 * kSector);
    }
}
