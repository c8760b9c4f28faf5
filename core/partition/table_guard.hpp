// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
#include <cstddef>
#include <optional>

#include "core/partition/partition.hpp"

namespace guestfrag {

class DiskImage;

/// Partition tables that libparted 3.5 cannot be handed, because it ends the process with
/// an assertion instead of returning an error. They are recognised here, from the raw
/// sectors, before libparted sees the disk.
namespace table_guard {

/// The disk's first sector, which the caller has already read (no second read for it).
using FirstSector = std::array<std::byte, 512>;

/// A GPT with a signed header whose entry count libparted asserts on (0, or more than
/// 8,192: gpt.c `_parse_header`, and ped_malloc(0) for a header whose CRC is wrong). Such a
/// table is read here, from the first header whose CRC is right: the entry array is checked
/// against the disk size and its CRC, and streamed in bounded chunks, so memory follows the
/// used entries only; with no such header it throws Error(Corrupt). Returns nullopt when
/// neither GPT header has such a count (libparted reads the table). Throws Error(Corrupt) for a bad entry array
/// or entry, Error(Unsupported) for an entry array over 64 MiB. The array of every header
/// that carries the signature is checked, whether its CRC is right or not: libparted
/// allocates the whole array a header names before it checks anything. The entries of the
/// first header whose CRC is right are checked for every table: one outside the usable
/// sectors throws Error(Corrupt) when the array's CRC is right too (libparted would trust it).
[[nodiscard]] std::optional<PartitionTable> read_gpt_beyond_libparted(const DiskImage& image,
                                                                    const FirstSector& mbr);

/// Follows the chain of extended boot records of an MBR's extended partition. Throws
/// Error(Corrupt) when the chain links back to a record it has already visited (libparted
/// recurses into such a loop until it asserts) or holds more than 16,384 records.
void check_ebr_chain(const DiskImage& image, const FirstSector& mbr);

}  // namespace table_guard
}  // namespace guestfrag
