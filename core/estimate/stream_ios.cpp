// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/stream_ios.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace guestfrag {

namespace {

/// A maximal stretch of a stream that is VCN-consecutive and LCN-contiguous: what one
/// sequential read covers.
struct Piece {
    std::int64_t vcn = 0;
    std::int64_t lcn = 0;
    std::int64_t clusters = 0;
};

}  // namespace

bool valid_max_io(std::uint64_t max_io) noexcept { return max_io != 0 && max_io % kSectorBytes == 0; }

void check_max_io(std::uint64_t max_io) {
    if (!valid_max_io(max_io))
        throw Error(ErrorKind::Unsupported, "the largest IO must be a positive multiple of 512 bytes");
}

void append_stream_ios(const VolumeMap& volume, const Stream& stream, std::uint64_t max_io,
                       std::vector<Io>& out) {
    check_max_io(max_io);
    const std::uint64_t cs = volume.cluster_size;
    if (cs == 0 || cs % kSectorBytes != 0)
        throw Error(ErrorKind::Unsupported,
                    "cluster size " + std::to_string(cs) + " is not a multiple of 512");

    // Byte offsets stay below 2^62 so that the sums below cannot overflow; a run beyond
    // that is corrupt (NTFS volumes end far earlier) and contributes nothing.
    constexpr std::uint64_t kByteLimit = std::uint64_t{1} << 62;
    const auto max_cluster = static_cast<std::int64_t>(kByteLimit / cs / 4);
    if (volume.partition_offset >= kByteLimit / 2) return;

    // The last IO ends at the size rounded up to a whole sector (docs/design.md §4).
    const std::uint64_t end = stream.size >= kByteLimit
                                  ? kByteLimit
                                  : (stream.size + kSectorBytes - 1) / kSectorBytes * kSectorBytes;

    auto emit = [&](const Piece& p) {
        if (p.clusters == 0) return;
        const std::uint64_t from = static_cast<std::uint64_t>(p.vcn) * cs;
        if (from >= end) return;  // allocated beyond the data (preallocation): never read
        const std::uint64_t to = std::min(static_cast<std::uint64_t>(p.vcn + p.clusters) * cs, end);
        const std::uint64_t disk = volume.partition_offset + static_cast<std::uint64_t>(p.lcn) * cs;
        for (std::uint64_t pos = from; pos < to;) {
            const std::uint64_t length = std::min(max_io, to - pos);
            out.push_back(Io{static_cast<std::int64_t>((disk + (pos - from)) / kSectorBytes), length});
            pos += length;
        }
    };

    // Runs the mapping pairs split but that continue each other on disk and in the file
    // (attribute-list boundaries, runs the planner split) are one extent: an IO may span
    // them. A hole always ends an extent, even when the data after it continues on disk.
    Piece piece;
    for (const Extent& e : stream.extents) {
        if (e.lcn < 0 || e.clusters <= 0 || e.vcn < 0) {  // holes read nothing
            emit(piece);
            piece = {};
            continue;
        }
        if (e.vcn > max_cluster || e.lcn > max_cluster || e.clusters > max_cluster) continue;  // corrupt
        if (piece.clusters != 0 && e.vcn == piece.vcn + piece.clusters &&
            e.lcn == piece.lcn + piece.clusters && piece.clusters <= max_cluster) {
            piece.clusters += e.clusters;
            continue;
        }
        emit(piece);
        piece = Piece{e.vcn, e.lcn, e.clusters};
    }
    emit(piece);
}

}  // namespace guestfrag
