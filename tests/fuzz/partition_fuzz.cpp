// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the partition path: the input is the start of a virtual disk (MBR,
// extended boot records, GPT header and entries), read from memory through a RawImage over a
// MemorySource, first by our table guard and then by libparted. guestfrag::Error is the
// expected way to refuse a table; a crash, a libparted assertion (which ends the process: the
// guard exists to keep libparted from reaching one), a sanitizer report or a hang is a bug.
//
// Each input is tried as it is and with its GPT CRCs made right, so that mutations of the
// entry array get past the checksums into the code that trusts them.
//
// `packaging/setup.sh fuzz` seeds it with small disks partitioned by sfdisk: an MBR with an
// extended partition and logical ones, and a GPT.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/raw_image.hpp"
#include "core/partition/partition.hpp"

namespace {

constexpr std::size_t kSector = 512;

void read_table(const std::uint8_t* data, std::size_t size) {
    auto input = std::make_shared<guestfrag::MemorySource>(
        "partition-fuzz-input", std::span(reinterpret_cast<const std::byte*>(data), size));
    try {
        const guestfrag::RawImage disk(std::move(input));
        const guestfrag::PartitionTable table = guestfrag::read_partitions(disk);
        for (const guestfrag::Partition& p : table.partitions)
            if (p.length > disk.size() || p.start > disk.size() - p.length) __builtin_trap();
    } catch (const guestfrag::Error& e) {
        if (e.kind() == guestfrag::ErrorKind::Internal) __builtin_trap();
    }
}

std::uint64_t le(const std::vector<std::uint8_t>& bytes, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | bytes[at + static_cast<std::size_t>(i)];
    return v;
}

void put_le32(std::vector<std::uint8_t>& bytes, std::size_t at, std::uint32_t v) {
    for (std::size_t i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

/// The input with the primary GPT header's entry-array CRC and header CRC recomputed (when
/// the header and the array it names lie inside the input).
std::vector<std::uint8_t> with_gpt_crcs(const std::uint8_t* data, std::size_t size) {
    std::vector<std::uint8_t> bytes(data, data + size);
    const std::size_t header = kSector;
    if (size < header + 92) return bytes;
    const std::uint64_t header_size = le(bytes, header + 12, 4);
    const std::uint64_t entries_lba = le(bytes, header + 72, 8);
    const std::uint64_t count = le(bytes, header + 80, 4);
    const std::uint64_t entry_size = le(bytes, header + 84, 4);
    if (entries_lba < size / kSector && count * entry_size <= size - entries_lba * kSector) {
        const auto* array = bytes.data() + entries_lba * kSector;
        put_le32(bytes, header + 88,
                 static_cast<std::uint32_t>(crc32(0, array, static_cast<uInt>(count * entry_size))));
    }
    if (header_size >= 92 && header_size <= kSector && header + header_size <= size) {
        put_le32(bytes, header + 16, 0);
        put_le32(bytes, header + 16,
                 static_cast<std::uint32_t>(crc32(0, bytes.data() + header, static_cast<uInt>(header_size))));
    }
    return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    read_table(data, size);
    const std::vector<std::uint8_t> fixed = with_gpt_crcs(data, size);
    read_table(fixed.data(), fixed.size());
    return 0;
}

extern "C" void guestfrag_on_parted_assertion() { __builtin_trap(); }
