// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/image/writable_disk.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class RateLimiter;

/// What copy_disk_sparse wrote.
struct SparseCopy {
    std::uint64_t bytes_written = 0;
    /// The blocks of `hole_block` bytes (clipped to the disk) that some write touched: what
    /// the file stores, each block tested non-zero.
    ByteSet blocks;
};

/// Bytes [to, to + length) of the copy that take the image's bytes at `from`.
struct Relocation {
    std::uint64_t to = 0;
    std::uint64_t from = 0;
    std::uint64_t length = 0;
};

/// The virtual-disk bytes of the moves of `plan` on `map`'s volume at one end: their
/// destinations (`end` = &Move::to_lcn) or their sources (&Move::from_lcn).
[[nodiscard]] ByteSet moved_bytes(const VolumeMap& map, const Plan& plan, std::int64_t Move::*end);

/// The virtual-disk bytes of `map`'s $MFT (record 0's unnamed $DATA).
[[nodiscard]] ByteSet mft_bytes(const VolumeMap& map);

/// The moves of `plan` on `map`'s volume whose destinations a copy may write ahead: each
/// lies outside `keep` (what the copy writes in place), so it is free before the moves or
/// a source of theirs, and its source is the input's data, outside `free` (the volume's free
/// space before the moves). Each takes the input's bytes at the move's source, which the
/// move finds in place unless a move before it changed either range
/// (DeferredCopyDisk::copied_ahead). Ascending and disjoint: of overlapping destinations
/// the first in disk order (then in the plan) stays.
[[nodiscard]] std::vector<Relocation> moves_to_copy_ahead(const VolumeMap& map, const Plan& plan,
                                                          const ByteSet& keep, const ByteSet& free);

struct SparseCopyOptions {
    /// When set, nothing outside it (and the relocations) is read or written (compaction
    /// leaves NTFS-free clusters out).
    const ByteSet* only = nullptr;
    /// The unit tested for zeros, a power of two dividing 128 KiB: a block whose bytes read all
    /// zero is not written and stays a hole. Compaction gives the file system's block, so
    /// no later pass has to read the copy again to find zero blocks.
    std::uint64_t hole_block = std::uint64_t{128} << 10;
    /// Written in the same pass, in disk order among the rest: ascending, disjoint, within
    /// the disk and outside what is copied in place. Compaction writes the packing moves'
    /// destinations here, so that each move finds its bytes in place (docs/compact.md).
    std::span<const Relocation> relocated;
};

/// Writes the whole virtual disk of `image` into `fd`, a fresh empty file open for writing,
/// as a sparse raw disk: the file is sized to the disk, and only bytes that some layer
/// stores and that are not in an all-zero block are written, so unallocated and zero areas
/// stay holes. Throws Error(Io) for a host failure, Error(Internal) for a bad hole_block,
/// what DiskImage::read throws, and Error(Cancelled) from `progress` (bytes of the disk
/// done). Each read (at most 128 KiB) first takes its bytes from `limiter` when there is one.
/// Bytes that follow each other on the disk are written together, up to 128 KiB at a time.
/// Cost: reads the allocated part of the image (within `only`) and the relocations' sources
/// once; memory 128 KiB and the written blocks as intervals.
SparseCopy copy_disk_sparse(const DiskImage& image, int fd, const Progress& progress = {},
                            RateLimiter* limiter = nullptr, const SparseCopyOptions& options = {});

/// A raw file being copied from an image in which some bytes are not copied yet: until a
/// write replaces them, they read from the image. Compaction leaves out of its copy the
/// clusters its packing moves take data out of: the moves read them through this disk and
/// write them once, at their destinations, and copy() fetches only those a skipped move
/// leaves in use. The copy wrote its `relocated` pieces (ascending, disjoint) ahead, from
/// sources the image uses: a move between the two finds them there (copied_ahead) while
/// neither has changed since. Borrows `file` and `image`, which must outlive it. Not safe
/// for concurrent writes.
class DeferredCopyDisk final : public WritableDisk {
public:
    DeferredCopyDisk(WritableRawFile& file, const DiskImage& image, ByteSet deferred,
                     std::vector<Relocation> relocated = {});

    [[nodiscard]] const std::string& path() const noexcept override { return file_.path(); }

    /// Throws what the file and the image throw.
    void read(std::uint64_t offset, std::span<std::byte> out) const override;

    /// Throws what the file throws.
    void write(std::uint64_t offset, std::span<const std::byte> bytes) override;

    /// True when [to, to + length) lies in one relocated piece taking the image's bytes at
    /// `from` and neither range was written or taken since: the piece is then taken as
    /// written now (no longer deferred, and its bytes no longer the image's).
    bool copied_ahead(std::uint64_t to, std::uint64_t from, std::uint64_t length) override;

    /// The bytes not copied and not written since.
    [[nodiscard]] const ByteSet& deferred() const noexcept { return deferred_; }

    /// Copies the deferred bytes within `bytes` from the image, each read asked of `limiter`
    /// (when given) first. Returns how many. Throws what read and write throw, and
    /// Error(Cancelled) when `stop` is requested during a wait.
    std::uint64_t copy(const ByteSet& bytes, RateLimiter* limiter = nullptr,
                       const std::stop_token& stop = {});

private:
    WritableRawFile& file_;
    const DiskImage& image_;
    ByteSet deferred_;
    std::vector<Relocation> relocated_;
    ByteSet changed_;  ///< written or taken since the copy
};

}  // namespace guestfrag
