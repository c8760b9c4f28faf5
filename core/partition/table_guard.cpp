// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/partition/table_guard.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"

namespace guestfrag::table_guard {
namespace {

constexpr std::uint64_t kSector = 512;
using Sector = std::array<std::byte, kSector>;

/// libparted's `_parse_header` asserts 0 < entries <= 8192.
constexpr std::uint32_t kLibpartedMaxEntries = 8192;
/// The UEFI minimum is 16 KiB (128 entries of 128 bytes); 64 MiB is half a million entries.
/// A larger array is refused rather than read: on a sparse image it could be terabytes of
/// zeros, which would take hours to checksum.
constexpr std::uint64_t kMaxEntryArray = 64ull << 20;
constexpr std::size_t kMaxEbrs = 16384;

std::uint32_t le32(const std::byte* p) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(p[i]);
    return v;
}

std::uint64_t le64(const std::byte* p) { return le32(p) | (std::uint64_t{le32(p + 4)} << 32); }

std::uint32_t crc(std::uint32_t seed, const std::byte* data, std::size_t length) {
    return static_cast<std::uint32_t>(
        ::crc32(seed, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(length)));
}

bool read_sector(const DiskImage& image, std::uint64_t lba, Sector& out) {
    if (lba >= image.size() / kSector) return false;
    image.read(lba * kSector, out);
    return true;
}

bool has_boot_signature(const Sector& s) { return s[510] == std::byte{0x55} && s[511] == std::byte{0xAA}; }

struct GptHeader {
    std::uint64_t first_usable = 0;
    std::uint64_t last_usable = 0;
    std::uint64_t entries_lba = 0;
    std::uint32_t entries = 0;
    std::uint32_t entry_size = 0;
    std::uint32_t entries_crc = 0;
};

struct SignedHeader {
    GptHeader fields;
    bool crc_ok = false;  ///< libparted parses the entries of a header whose CRC is right
};

/// The GPT header at `lba` when it carries the signature, and whether its CRC is right.
std::optional<SignedHeader> header_at(const DiskImage& image, std::uint64_t lba) {
    Sector s{};
    if (!read_sector(image, lba, s) || std::memcmp(s.data(), "EFI PART", 8) != 0) return std::nullopt;
    SignedHeader h{{le64(&s[40]), le64(&s[48]), le64(&s[72]), le32(&s[80]), le32(&s[84]), le32(&s[88])}, false};
    const std::uint32_t header_size = le32(&s[12]);
    if (header_size < 92 || header_size > kSector) return h;
    const std::uint32_t stored = le32(&s[16]);
    std::memset(&s[16], 0, 4);
    h.crc_ok = crc(0, s.data(), header_size) == stored;
    return h;
}

/// Throws unless the entry array `h` names has sane entries and lies inside the disk.
/// libparted allocates the whole array before it checks anything (a 1 GiB buffer for a
/// header found by the partition fuzzer), even for a header whose CRC is wrong.
void check_entry_array(const DiskImage& image, const GptHeader& h) {
    if (h.entry_size < 128 || h.entry_size % 8 != 0)
        throw Error(ErrorKind::Corrupt, "GPT partition entries of " + std::to_string(h.entry_size) +
                                            " bytes (at least 128, a multiple of 8)");
    const std::uint64_t bytes = std::uint64_t{h.entries} * h.entry_size;
    if (bytes > kMaxEntryArray)
        throw Error(ErrorKind::Unsupported, "GPT partition entry array of " + std::to_string(bytes) +
                                                " bytes (" + std::to_string(h.entries) +
                                                " entries): more than the 64 MiB guestfrag reads");
    const std::uint64_t size = image.size();
    if (h.entries_lba > size / kSector || bytes > size - h.entries_lba * kSector)
        throw Error(ErrorKind::Corrupt, "GPT partition entry array (" + std::to_string(h.entries) +
                                            " entries at sector " + std::to_string(h.entries_lba) +
                                            ") lies past the end of the disk");
}

bool protective_mbr(const Sector& mbr) {
    if (!has_boot_signature(mbr)) return false;
    for (std::size_t i = 0; i < 4; ++i)
        if (mbr[446 + 16 * i + 4] == std::byte{0xEE}) return true;
    return false;
}

bool all_zero(const std::byte* p, std::size_t n) {
    return std::all_of(p, p + n, [](std::byte b) { return b == std::byte{0}; });
}

/// The used entries of a header check_entry_array accepted, read in bounded chunks.
struct Entries {
    PartitionTable table;
    bool crc_ok = false;                  ///< the array matches the CRC in its header
    std::optional<std::string> bad_entry;  ///< the first entry outside the usable sectors
};

Entries read_entries(const DiskImage& image, const GptHeader& h) {
    Entries out;
    out.table.label = "gpt";
    // Whole entries per chunk, about 1 MiB: memory stays bounded whatever the count.
    const std::size_t per_chunk = std::max<std::size_t>(1, (1u << 20) / h.entry_size);
    std::vector<std::byte> chunk;
    std::uint32_t sum = 0;
    for (std::uint64_t first = 0; first < h.entries; first += per_chunk) {
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(per_chunk, h.entries - first));
        chunk.resize(count * h.entry_size);
        image.read(h.entries_lba * kSector + first * h.entry_size, chunk);
        sum = crc(sum, chunk.data(), chunk.size());
        for (std::size_t i = 0; i < count; ++i) {
            const std::byte* e = chunk.data() + i * h.entry_size;
            if (all_zero(e, 16)) continue;  // type GUID zero: an unused entry
            const std::uint64_t number = first + i + 1;
            const std::uint64_t start = le64(e + 32);
            const std::uint64_t end = le64(e + 40);
            if (end < start || start < h.first_usable || end > h.last_usable) {
                if (!out.bad_entry)
                    out.bad_entry = "GPT partition " + std::to_string(number) + " (sectors " + std::to_string(start) +
                                    " to " + std::to_string(end) + ") lies outside the usable sectors " +
                                    std::to_string(h.first_usable) + " to " + std::to_string(h.last_usable);
                continue;
            }
            // Bounded by the usable sectors above, so these products cannot overflow for
            // any disk that exists; the caller checks the end against the disk size.
            out.table.partitions.push_back(
                Partition{static_cast<int>(number), start * kSector, (end - start + 1) * kSector, "gpt", ""});
        }
    }
    out.crc_ok = sum == h.entries_crc;
    return out;
}

bool is_extended(std::byte type) {
    return type == std::byte{0x05} || type == std::byte{0x0F} || type == std::byte{0x85};
}

}  // namespace

std::optional<PartitionTable> read_gpt_beyond_libparted(const DiskImage& image, const FirstSector& mbr) {
    if (!protective_mbr(mbr)) return std::nullopt;
    const std::uint64_t last = image.size() / kSector - 1;
    std::optional<GptHeader> use;
    // The first signed header whose entry count libparted asserts on. libparted allocates
    // the array of a header before it checks the header's CRC (a count of 0 reaches
    // ped_malloc(0), found by the partition fuzzer), so such a header must never reach it,
    // whatever its CRC.
    std::optional<std::string> beyond;
    for (const std::uint64_t lba : {std::uint64_t{1}, last}) {
        const auto h = header_at(image, lba);
        if (!h) continue;
        check_entry_array(image, h->fields);
        if (!beyond && (h->fields.entries == 0 || h->fields.entries > kLibpartedMaxEntries))
            beyond = "GPT header at sector " + std::to_string(lba) + " lists " + std::to_string(h->fields.entries) +
                     " partition entries";
        if (h->crc_ok && !use) use = h->fields;
    }
    if (!use) {
        if (beyond) throw Error(ErrorKind::Corrupt, *beyond + " and no GPT header has a correct CRC");
        return std::nullopt;
    }
    Entries entries = read_entries(image, *use);
    if (beyond && !entries.crc_ok)
        throw Error(ErrorKind::Corrupt, "GPT partition entry array does not match the CRC in its header");
    // An array libparted will trust (its CRC is right) must not hold an entry outside the
    // usable sectors: libparted asserts on a start or end beyond 2^63 (ped_geometry_set,
    // found by the partition fuzzer). An array whose CRC is wrong libparted does not use.
    if (entries.crc_ok && entries.bad_entry) throw Error(ErrorKind::Corrupt, *entries.bad_entry);
    if (!beyond) return std::nullopt;
    return std::move(entries.table);
}

void check_ebr_chain(const DiskImage& image, const FirstSector& mbr) {
    if (!has_boot_signature(mbr)) return;
    for (std::size_t slot = 0; slot < 4; ++slot) {
        const std::byte* entry = &mbr[446 + 16 * slot];
        if (!is_extended(entry[4])) continue;
        // Extended entries inside EBRs are relative to the primary extended partition;
        // libparted follows every one of them, so this does too, depth first.
        const std::uint64_t base = le32(entry + 8);
        std::unordered_set<std::uint64_t> visited;
        std::vector<std::uint64_t> pending{base};
        std::vector<std::pair<std::uint64_t, std::uint64_t>> logical;  // first and last sector
        while (!pending.empty()) {
            const std::uint64_t lba = pending.back();
            pending.pop_back();
            if (!visited.insert(lba).second)
                throw Error(ErrorKind::Corrupt, "msdos partition table: the chain of logical partitions links back to "
                                                "the extended boot record at sector " +
                                                    std::to_string(lba));
            if (visited.size() > kMaxEbrs)
                throw Error(ErrorKind::Corrupt, "msdos partition table: more than " + std::to_string(kMaxEbrs) +
                                                    " extended boot records");
            Sector ebr{};
            // A record past the end or without a signature ends the chain here; libparted
            // reports it in its own words.
            if (!read_sector(image, lba, ebr) || !has_boot_signature(ebr)) continue;
            for (std::size_t i = 0; i < 4; ++i) {
                const std::byte* e = &ebr[446 + 16 * i];
                if (is_extended(e[4]))
                    pending.push_back(base + le32(e + 8));
                else if (e[4] != std::byte{0} && le32(e + 12) != 0)
                    logical.emplace_back(lba + le32(e + 8), lba + le32(e + 8) + le32(e + 12) - 1);
            }
        }
        // libparted gives each logical partition but the first the sectors between it and
        // the one before it, for its boot record, and asserts that there is at least one
        // (add_logical_part_metadata, found by the partition fuzzer): partitions that overlap
        // or touch have none, and no real chain can hold them.
        std::ranges::sort(logical);
        for (std::size_t i = 1; i < logical.size(); ++i)
            if (logical[i].first <= logical[i - 1].second + 1)
                throw Error(ErrorKind::Corrupt, "msdos partition table: the logical partitions at sectors " +
                                                    std::to_string(logical[i - 1].first) + " and " +
                                                    std::to_string(logical[i].first) +
                                                    " overlap or leave no sector for a boot record between them");
    }
}

}  // namespace guestfrag::table_guard
