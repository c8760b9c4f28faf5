// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/image/disk_image.hpp"

namespace guestfrag {

/// A forward jump in the file up to this far is read through, not sought: the format's
/// own metadata sits between data blocks (a VHD block's 512-byte sector bitmap, qcow2 L2
/// tables and refcount blocks, VMDK grain tables), and readahead spans such gaps.
inline constexpr std::uint64_t kHostSeekGap = std::uint64_t{1} << 20;

/// How contiguously a layer's file holds the guest data of a range of the virtual disk:
/// host-level fragmentation of the .qcow2/.vmdk/.vhdx itself, which a sequential guest
/// read pays for in seeks on the datastore. Formulas in docs/metrics.md §6.
struct HostLayout {
    std::uint64_t stored_bytes = 0;    ///< stored data with a known place in the layer's files
    std::uint64_t unplaced_bytes = 0;  ///< stored data without one (compressed grains/clusters)
    std::uint64_t extents = 0;         ///< pieces contiguous both on the disk and in one file
    /// Places where reading the stored data in disk order leaves the file position: the
    /// next extent is in another file, behind the last one's end, or more than
    /// kHostSeekGap past it...
    std::uint64_t seeks = 0;
    std::uint64_t backward_seeks = 0;  ///< ...and of those, jumps back within the same file
    std::uint64_t granules = 0;        ///< growth-unit-sized steps the stored data spans
    double fragmentation_percent = 0;  ///< 100 · seeks / max(seeks, granules − 1); 0 if both are 0

    friend bool operator==(const HostLayout&, const HostLayout&) = default;
};

/// Appends `piece` (past every extent already there) to `extents`, extending the last one
/// when the piece continues it on the disk and in the same file: keeps them maximal.
void append_host_extent(std::vector<HostExtent>& extents, const HostExtent& piece);

/// Host layout of `layer` over the virtual-disk bytes [begin, end). O(host extents).
[[nodiscard]] HostLayout analyze_host_layout(const Layer& layer, std::uint64_t begin, std::uint64_t end);

}  // namespace guestfrag
