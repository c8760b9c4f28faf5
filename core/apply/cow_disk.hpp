// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/apply/qcow2_writer.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/writable_disk.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// A writable view of a read-only DiskImage that keeps every write beside it: written bytes
/// go to a sparse scratch file at their disk offset and are remembered as a byte set; reads
/// take written bytes from the scratch and the rest from the image. So the moves of `apply`
/// can run on the input without copying the disk or writing the input, and the qcow2
/// overlay then holds only what was written. Borrows `base` and `scratch_fd` (an empty file
/// open O_RDWR, e.g. one already unlinked), which must outlive it. The disk's size is the
/// image's. Not safe for concurrent writes.
class RateLimiter;

class CopyOnWriteDisk final : public WritableDisk {
public:
    CopyOnWriteDisk(const DiskImage& base, int scratch_fd, std::string name);

    [[nodiscard]] const std::string& path() const noexcept override { return name_; }
    /// Throws what the image and the scratch file throw, Error(Corrupt) past size().
    void read(std::uint64_t offset, std::span<std::byte> out) const override;
    /// Throws Error(Io) from the scratch file, Error(Corrupt) past size().
    void write(std::uint64_t offset, std::span<const std::byte> bytes) override;

    [[nodiscard]] std::uint64_t size() const noexcept { return base_.size(); }
    [[nodiscard]] const DiskImage& base() const noexcept { return base_; }
    /// Every disk byte written so far (whatever the bytes were).
    [[nodiscard]] const ByteSet& written() const noexcept { return written_; }

private:
    void check_range(std::uint64_t offset, std::uint64_t length) const;

    const DiskImage& base_;
    WritableRawFile scratch_;
    std::string name_;
    ByteSet written_;
};

/// What write_qcow2_overlay wrote.
struct OverlayWritten {
    std::uint64_t clusters = 0;    ///< data clusters stored (64 KiB each)
    std::uint64_t file_bytes = 0;  ///< the overlay file's size
};

/// Writes into `fd` (an empty file open for writing, `path` naming it) a qcow2 overlay of
/// `disk`'s base image, recording `backing`: every 64 KiB cluster that a write touched and
/// that now differs from the base is stored, nothing else, so the overlay over its backing
/// file reads as `disk`. Each cluster read for it first takes its bytes from `limiter` when
/// there is one. Throws Error(Io), what the reads throw, Error(Cancelled) from `progress`
/// (bytes of the written ranges done). Cost: reads each touched cluster twice (disk and
/// base); memory two clusters and the writer's index.
OverlayWritten write_qcow2_overlay(const CopyOnWriteDisk& disk, int fd, const std::string& path,
                                   const Qcow2Backing& backing, const Progress& progress = {},
                                   RateLimiter* limiter = nullptr);

}  // namespace guestfrag
