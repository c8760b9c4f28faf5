// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/model/volume_map.hpp"

struct _ntfs_volume;

namespace guestfrag::ntfs {

/// A $FILE_NAME attribute: one name of the file in one namespace.
struct NameAttribute {
    std::uint64_t parent = 0;      ///< parent directory's record number
    std::uint8_t name_space = 0;   ///< 0 POSIX, 1 Win32, 2 DOS, 3 Win32+DOS
    std::string name;              ///< UTF-8
};

/// One attribute record of a non-resident attribute: a segment of its runlist. An
/// attribute whose runlist does not fit one MFT record is split into segments that live
/// in extension records, each covering [lowest_vcn, highest_vcn].
struct AttributeSegment {
    std::uint32_t type = 0;
    std::string name;
    std::uint16_t flags = 0;
    std::uint8_t compression_unit = 0;  ///< log2 clusters, header byte 0x22
    std::int64_t lowest_vcn = 0;
    std::int64_t highest_vcn = 0;
    std::uint64_t data_size = 0;       ///< valid in the segment with lowest_vcn == 0
    std::uint64_t allocated_size = 0;  ///< likewise
    std::vector<Extent> runs;          ///< this segment's runs, VCN order
};

/// What guestfrag needs from one in-use MFT record.
struct MftRecord {
    std::uint64_t number = 0;
    std::uint64_t base = 0;            ///< base record number; == number for a base record
    std::uint16_t base_sequence = 0;   ///< sequence the base reference expects (extensions)
    std::uint16_t sequence = 0;
    bool directory = false;
    std::vector<NameAttribute> names;
    std::vector<AttributeSegment> segments;
};

/// Parses the raw bytes of MFT record `number` (one record_size slice of $MFT's data).
/// Applies the update-sequence fixup in place, so `bytes` is modified. Returns false for
/// a slot that is not in use. Throws Error(Corrupt) naming the record when its signature,
/// fixups, attribute chain or mapping pairs are invalid, or a run lies outside the volume.
/// O(record size); allocates only the decoded runs and names. Without `file_names`,
/// $FILE_NAME attributes are checked but not decoded (MftRecord::names stays empty).
bool parse_mft_record(const _ntfs_volume& volume, std::span<std::byte> bytes, std::uint64_t number,
                      MftRecord& out, bool file_names = true);

}  // namespace guestfrag::ntfs
