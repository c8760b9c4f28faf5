// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "core/image/disk_image.hpp"
#include "core/image/writable_disk.hpp"

namespace guestfrag {

/// A WritableDisk that is a raw disk file open for reading and writing. Reads and writes go
/// straight to the file, so a read sees every earlier write (unlike RawImage, nothing is
/// mapped at open). Not safe for concurrent writes to overlapping ranges.
class WritableRawFile final : public WritableDisk {
public:
    /// Borrows `fd`, a file open O_RDWR that must outlive this object; `path` names it for
    /// libntfs-3g's messages. With `record_writes`, written() keeps every range written
    /// (off by default: a writer of a whole volume would hold an interval per file).
    /// Advises the kernel that `fd` is read at random (see the constructor's definition).
    WritableRawFile(int fd, std::string path, bool record_writes = false);

    [[nodiscard]] const std::string& path() const noexcept override { return path_; }
    /// The borrowed descriptor, for what the file system does beyond reads and writes.
    [[nodiscard]] int fd() const noexcept { return fd_; }

    /// Fills `out` with the file's bytes at `offset`. Throws Error(Io) on an OS failure and
    /// Error(Corrupt) when the range runs past the end of the file.
    void read(std::uint64_t offset, std::span<std::byte> out) const override;

    /// Writes all of `bytes` at `offset`, growing the file when needed. Throws Error(Io).
    void write(std::uint64_t offset, std::span<const std::byte> bytes) override;

    /// Every byte written through this object when it records writes (else nothing): what
    /// a caller must look at again after libntfs-3g's writes, which it cannot see
    /// otherwise (compaction's zero blocks).
    [[nodiscard]] const ByteSet& written() const noexcept { return written_; }

private:
    int fd_;
    std::string path_;
    bool record_writes_;
    ByteSet written_;
};

}  // namespace guestfrag
