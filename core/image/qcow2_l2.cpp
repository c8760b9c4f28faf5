// SPDX-License-Identifier: GPL-2.0-or-later
// qcow2 L1 and L2 entry decoding. Standard L2 entry (64 bits):
//   bit 63 COPIED (refcount is 1; irrelevant for reading)   bit 62 COMPRESSED
//   bits 9..55 host cluster offset (0: unallocated)           bit 0 reads as zeros (v3)
// A compressed cluster descriptor instead splits bits 0..61 at x = 62 - (cluster_bits - 8):
//   bits 0..x-1 host byte offset, bits x..61 additional 512-byte sectors after the first.
// With extended L2 a second word follows: bits 0..31 subcluster allocated, 32..63 zero,
// and the entry's own bit 0 is not used.
#include "core/image/qcow2_l2.hpp"

#include <string>

#include "core/error.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kOffsetMask = 0x00fffffffffffe00;  // bits 9..55
constexpr std::uint64_t kCompressed = std::uint64_t{1} << 62;
constexpr std::uint64_t kZero = 1;

[[noreturn]] void corrupt_entry(std::uint64_t guest_offset, const std::string& what) {
    throw Error(ErrorKind::Corrupt,
                "qcow2: L2 entry for virtual offset " + std::to_string(guest_offset) + ": " + what);
}

Qcow2Cluster decode_compressed(const Qcow2Header& header, std::uint64_t entry, std::uint64_t guest_offset,
                               std::uint64_t file_size) {
    const unsigned split = 62 - (header.cluster_bits - 8);
    const std::uint64_t host = entry & ((std::uint64_t{1} << split) - 1);
    const std::uint64_t sectors =
        ((entry >> split) & ((std::uint64_t{1} << (header.cluster_bits - 8)) - 1)) + 1;
    if (host >= file_size)
        corrupt_entry(guest_offset, "compressed data at offset " + std::to_string(host) +
                                        " lies past the end of the file (" + std::to_string(file_size) +
                                        " bytes)");
    Qcow2Cluster cluster;
    cluster.host_offset = host;
    // The sector count covers the sector holding `host` and those after it.
    cluster.compressed_bytes = sectors * 512 - (host & 511);
    cluster.data = header.granules_per_cluster() == 32 ? 0xffffffffu : 1u;
    return cluster;
}

void check_stored(const Qcow2Header& header, const Qcow2Cluster& cluster, std::uint64_t guest_offset,
                  std::uint64_t file_size) {
    if (cluster.host_offset % header.cluster_size() != 0)
        corrupt_entry(guest_offset,
                      "host offset " + std::to_string(cluster.host_offset) + " is not cluster aligned");
    if (cluster.data == 0) return;
    // The last stored granule must start inside the file; qemu leaves the tail of a final
    // cluster unwritten when it is zero, and reads that part as zeros.
    unsigned last = 31;
    while (((cluster.data >> last) & 1) == 0) --last;
    const std::uint64_t start = cluster.host_offset + (std::uint64_t{last} << header.granule_bits());
    if (start >= file_size)
        corrupt_entry(guest_offset, "data at offset " + std::to_string(cluster.host_offset) +
                                        " lies past the end of the file (" + std::to_string(file_size) +
                                        " bytes)");
}

}  // namespace

Qcow2Cluster decode_qcow2_l2(const Qcow2Header& header, std::uint64_t entry, std::uint64_t bitmap,
                             std::uint64_t guest_offset, std::uint64_t file_size) {
    if (entry & kCompressed) return decode_compressed(header, entry, guest_offset, file_size);
    Qcow2Cluster cluster;
    cluster.host_offset = entry & kOffsetMask;
    if (header.extended_l2) {
        const auto alloc = static_cast<std::uint32_t>(bitmap);
        const auto zero = static_cast<std::uint32_t>(bitmap >> 32);
        if (alloc & zero) corrupt_entry(guest_offset, "subclusters both allocated and zero");
        if (cluster.host_offset == 0 && alloc != 0)
            corrupt_entry(guest_offset, "allocated subclusters without a host cluster");
        cluster.data = alloc;
        cluster.zero = zero;
    } else if (entry & kZero) {
        if (header.version < 3) corrupt_entry(guest_offset, "zero flag in a version 2 image");
        cluster.zero = 1;  // a preallocated host cluster, if any, is not read
    } else if (cluster.host_offset != 0) {
        cluster.data = 1;
    }
    if (cluster.host_offset != 0) check_stored(header, cluster, guest_offset, file_size);
    return cluster;
}

std::uint64_t decode_qcow2_l1(const Qcow2Header& header, std::uint64_t entry, std::uint64_t index,
                              std::uint64_t file_size) {
    const std::uint64_t offset = entry & kOffsetMask;
    if (offset == 0) return 0;
    const std::string name =
        "qcow2: L1 entry " + std::to_string(index) + ": L2 table at offset " + std::to_string(offset);
    if (offset % header.cluster_size() != 0)
        throw Error(ErrorKind::Corrupt, name + " is not cluster aligned");
    if (offset > file_size || header.cluster_size() > file_size - offset)
        throw Error(ErrorKind::Corrupt,
                    name + " lies past the end of the file (" + std::to_string(file_size) + " bytes)");
    return offset;
}

}  // namespace guestfrag
