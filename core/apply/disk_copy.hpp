// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
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

/// The virtual-disk bytes of `map`'s streams that no plan moves (Placement other than
/// Movable): no move takes data out of them, and none writes data into them, since they
/// never fall free.
[[nodiscard]] ByteSet pinned_bytes(const VolumeMap& map);

/// The moves of `plan` on `map`'s volume whose destinations a copy may write ahead: each
/// lies outside `keep` (what the copy writes in place), so it is free before the moves or
/// a source of theirs, and its source is the input's data, outside `free` (the volume's free
/// space before the moves). Each takes the input's bytes at the move's source, which the
/// move finds in place unless a move before it changed either range
/// (DeferredCopyDisk::copied_ahead). Ascending and disjoint: of overlapping destinations
/// the first in disk order (then in the plan) stays.
[[nodiscard]] std::vector<Relocation> moves_to_copy_ahead(const VolumeMap& map, const Plan& plan,
                                                          const ByteSet& keep, const ByteSet& free);

/// What a copy (copy_disk_sparse) shares with the moves that run beside it, through a
/// DeferredCopyDisk: how far the copy has come, and what the moves wrote where it has not,
/// which it then leaves as they wrote it. The copy goes in disk order and writes only the
/// image's bytes (or a relocated piece's source's), so until it has come by, those bytes
/// read from the image. Safe for one copying thread and one other.
class CopyFrontier {
public:
    /// Sizes `fd`, the copy's fresh file, to the disk's `size` (as the copy does again):
    /// the moves may read it before the copy has begun. Throws Error(Io).
    CopyFrontier(int fd, std::uint64_t size);

    /// The copy's side: writes `data` at `at` in `fd`, but what the moves wrote there; then
    /// every byte below at + data.size() is as the copy leaves it. Throws Error(Io).
    void write(int fd, std::span<const std::byte> data, std::uint64_t at);
    /// The copy's side: it has ended, and left every byte below `end`.
    void finish(std::uint64_t end) noexcept { reached_.store(end, std::memory_order_release); }

    /// Every byte below this is as the copy leaves it.
    [[nodiscard]] std::uint64_t reached() const noexcept { return reached_.load(std::memory_order_acquire); }
    /// The moves' side: writes `data` at `at` in `file`, the copy's; with `take`, the copy
    /// then leaves those bytes. Under the lock the copy writes under, so that the two take
    /// turns here, where a wait sleeps: ext4 lets one buffered write into a file at a time,
    /// and a writer waiting for it spins while the other copies. Throws Error(Io).
    void write_move(WritableRawFile& file, std::span<const std::byte> data, std::uint64_t at, bool take);
    /// What the moves took (read only by the thread that writes them).
    [[nodiscard]] const ByteSet& taken() const noexcept { return taken_; }
    /// The bytes of `range` the moves have not taken (as taken()).
    [[nodiscard]] ByteSet untaken(const ByteSet::interval_type& range) const;

private:
    std::mutex mutex_;  ///< one write into the file at a time
    ByteSet taken_;
    std::atomic<std::uint64_t> reached_{0};
};

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
    /// When set, the moves run beside the copy (DeferredCopyDisk), which writes through it.
    CopyFrontier* frontier = nullptr;
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

/// A copy that runs beside the moves: its frontier, and what it copies in place.
struct CopyBeside {
    CopyFrontier* frontier = nullptr;
    const ByteSet* copied = nullptr;
};

/// A raw file being copied from an image in which some bytes are not copied yet: until a
/// write replaces them, they read from the image. Compaction leaves out of its copy the
/// clusters its packing moves take data out of: the moves read them through this disk and
/// write them once, at their destinations, and copy() fetches only those a skipped move
/// leaves in use. The copy wrote its `relocated` pieces (ascending, disjoint) ahead, from
/// sources the image uses: a move between the two finds them there (copied_ahead) while
/// neither has changed since. With a `frontier`, that copy is still running, and what it
/// will write (`copied`, what it copies in place, and the relocated pieces) reads from the
/// image until it has. Borrows `file`, `image`, `relocated` and what `beside` names, which
/// must outlive it. Not safe for concurrent writes.
class DeferredCopyDisk final : public WritableDisk {
public:
    DeferredCopyDisk(WritableRawFile& file, const DiskImage& image, ByteSet deferred,
                     std::span<const Relocation> relocated = {}, CopyBeside beside = {});

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
    /// Whether the copy beside writes some of [from, end) (what it copies in place, or a
    /// relocated piece), when it has not come by.
    [[nodiscard]] bool copy_will_write(std::uint64_t from, std::uint64_t end) const;
    /// Reads bytes that are not deferred: the file's, or where the copy beside has not come
    /// by yet, the image's bytes it will write.
    void read_copied(std::uint64_t offset, std::span<std::byte> out) const;

    WritableRawFile& file_;
    const DiskImage& image_;
    ByteSet deferred_;
    std::span<const Relocation> relocated_;
    CopyBeside beside_;
    ByteSet changed_;  ///< written or taken since the copy
};

}  // namespace guestfrag
