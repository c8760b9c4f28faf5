// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

#include "core/image/layer_file.hpp"
#include "core/image/qcow2_header.hpp"

namespace guestfrag {

/// One guest cluster of a qcow2 layer as its L2 entry describes it, per granule (the
/// cluster itself, or each of its 32 subclusters with extended L2).
struct Qcow2Cluster {
    /// Stored clusters: where the cluster starts in the file. Compressed clusters: where the
    /// compressed bytes start (any byte offset).
    std::uint64_t host_offset = 0;
    std::uint64_t compressed_bytes = 0;  ///< > 0 for a compressed cluster: bytes to read (may pass EOF)
    std::uint32_t data = 0;              ///< granules whose bytes the layer stores (bit i = granule i)
    std::uint32_t zero = 0;              ///< granules the layer declares zero

    [[nodiscard]] bool compressed() const { return compressed_bytes != 0; }
    [[nodiscard]] Allocation state(unsigned granule) const {
        if ((data >> granule) & 1) return Allocation::Data;
        if ((zero >> granule) & 1) return Allocation::Zero;
        return Allocation::Unallocated;
    }
};

/// Decodes the L2 entry (and, with extended L2, the subcluster bitmap) of the guest cluster
/// starting at `guest_offset`. Pure function. Throws Error(Corrupt) naming the guest offset
/// for stored clusters that are not cluster aligned or start past the end of the file
/// (`file_size`), zero flags in version 2 images and contradictory subcluster bitmaps.
[[nodiscard]] Qcow2Cluster decode_qcow2_l2(const Qcow2Header& header, std::uint64_t entry,
                                           std::uint64_t bitmap, std::uint64_t guest_offset,
                                           std::uint64_t file_size);

/// Decodes L1 entry `index`: the file offset of its L2 table, 0 when the table is not
/// allocated. Throws Error(Corrupt) when the table is misaligned or lies past the end of the
/// file.
[[nodiscard]] std::uint64_t decode_qcow2_l1(const Qcow2Header& header, std::uint64_t entry,
                                            std::uint64_t index, std::uint64_t file_size);

}  // namespace guestfrag
