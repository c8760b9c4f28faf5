// SPDX-License-Identifier: GPL-2.0-or-later
// The seam under every container reader: where the bytes of a .qcow2/.vmdk/.vhd/.vhdx/raw
// file come from. Readers never touch a file descriptor; they read a ByteSource, so tests
// and fuzzers can hand them bytes in memory or a source that fails on purpose (as LevelDB
// reads through RandomAccessFile and qemu's format drivers through their child node).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/unique_fd.hpp"

namespace guestfrag {

/// Random-access, read-only bytes of one container file. Immutable once made and safe
/// to read from several threads (readers share one source between map() and read()).
class ByteSource {
public:
    virtual ~ByteSource() = default;
    ByteSource() = default;
    ByteSource(const ByteSource&) = delete;
    ByteSource& operator=(const ByteSource&) = delete;

    /// The path (or name) the source was opened as: shown in messages, and the base a
    /// reader resolves the relative names of sibling and parent files against.
    [[nodiscard]] virtual const std::string& name() const noexcept = 0;

    /// Size in bytes as of opening; readers check every table offset against it.
    [[nodiscard]] virtual std::uint64_t size() const noexcept = 0;

    /// Reads up to out.size() bytes at `offset` and returns how many it read: fewer when
    /// the data ends first (0 at or past its end) or when the source transfers less at a
    /// time, so callers loop (read_fully). Throws Error(Io, "read failed at offset N: ...").
    virtual std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const = 0;

    /// The unit the source's storage is allocated in when it knows which ranges hold data
    /// (a regular host file: its st_blksize); nullopt when it does not (block devices,
    /// memory without a map), and then every byte counts as stored.
    [[nodiscard]] virtual std::optional<std::uint64_t> allocation_unit() const { return std::nullopt; }

    /// The ranges of [0, size()) that hold data, widened to whole `granule`s and clipped
    /// to size(): how raw layers and flat VMDK extents see thin provisioning on the host.
    /// The default (no knowledge) is everything. Throws Error(Io).
    [[nodiscard]] virtual ByteSet stored_ranges(std::uint64_t granule) const;

    /// True for a host block device (reported by RawImage); false for anything else.
    [[nodiscard]] virtual bool is_block_device() const noexcept { return false; }

    /// Bytes the source really holds: for a regular host file the space allocated to it
    /// (st_blocks, as of opening), which a sparse file keeps far below its size; size()
    /// for anything else. Bounds how much a reader may build from the file (design.md
    /// "Limits on hostile sizes").
    [[nodiscard]] virtual std::uint64_t held_bytes() const noexcept { return size(); }
    /// Where the source's bytes lie on the host's device (FIEMAP), with `file` and `path`
    /// left for the caller; the default knows nothing and says so in `note`. Throws Error(Io).
    [[nodiscard]] virtual PhysicalFile physical_layout() const;
    /// Asks the host to read no more than each read asks for. For a sparse raw file, whose
    /// holes RawImage::read fills itself: the kernel's read-ahead past the data would fill
    /// page cache pages of the holes with zeros (docs/benchmarks.md, "Read-ahead off for
    /// sparse raw files"). A hint; nothing for a source that is not a host file.
    virtual void avoid_read_ahead() const {}
};

/// What this process read from image sources, by transport: `--stats` prints it, and the
/// benchmarks compare a remote analysis's bytes with a local one's.
struct ReadCounters {
    std::atomic<std::uint64_t> file_bytes{0};
    std::atomic<std::uint64_t> file_requests{0};
    std::atomic<std::uint64_t> nbd_bytes{0};     ///< asked of NBD servers, read-ahead included
    std::atomic<std::uint64_t> nbd_requests{0};
};

/// The process's counters.
[[nodiscard]] ReadCounters& read_counters() noexcept;

/// Reads exactly out.size() bytes at `offset`, looping over short reads. Throws
/// Error(Io, "file shrank while reading it") when the source ends first (it was
/// truncated after opening), and read_at's errors.
void read_fully(const ByteSource& source, std::uint64_t offset, std::span<std::byte> out);

/// The Error every source reports for a failed read at `offset` with errno `error`, so an
/// injected failure reads like a real one: Error(Io, "read failed at offset N: <strerror>").
[[nodiscard]] Error read_error(std::uint64_t offset, int error);

/// strerror(error) in the style of our messages (lower-case first letter).
[[nodiscard]] std::string errno_text(int error);

/// A host file (regular file or block device) read with pread(), so one source serves
/// several threads. Owns its descriptor.
class FileSource final : public ByteSource {
public:
    /// Why try_open failed: the step and its errno (0 for NotFileOrDevice).
    struct OpenFailure {
        enum class Step : std::uint8_t { Open, Stat, NotFileOrDevice, Size };
        Step step = Step::Open;
        int error = 0;
        bool directory = false;  ///< NotFileOrDevice: the path is a directory
    };

    /// Opens `path` read-only. A FIFO or socket is refused before any read could block:
    /// the open uses O_NONBLOCK, cleared once fstat says it is a regular file or block
    /// device. Throws Error(NotFound, "no such file: <path>"), Error(Unsupported, "<path>
    /// is not a regular file or block device"), Error(Io, "cannot open|stat|size <path>: ...").
    [[nodiscard]] static std::unique_ptr<FileSource> open(std::string path);

    /// Like open() but reports the failure in `failure` and returns null instead of
    /// throwing, for a caller with its own wording (RawImage's messages omit the path).
    [[nodiscard]] static std::unique_ptr<FileSource> try_open(std::string path, OpenFailure& failure);

    [[nodiscard]] const std::string& name() const noexcept override { return path_; }
    [[nodiscard]] std::uint64_t size() const noexcept override { return size_; }
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override;
    [[nodiscard]] std::optional<std::uint64_t> allocation_unit() const override;
    /// SEEK_DATA/SEEK_HOLE over the file (host_allocation); a block device: everything.
    [[nodiscard]] ByteSet stored_ranges(std::uint64_t granule) const override;
    [[nodiscard]] bool is_block_device() const noexcept override { return block_device_; }
    [[nodiscard]] std::uint64_t held_bytes() const noexcept override { return held_; }
    /// FIEMAP over the regular file; a note where the host file system (tmpfs, ...) or a
    /// block device cannot tell.
    [[nodiscard]] PhysicalFile physical_layout() const override;
    /// POSIX_FADV_RANDOM on the descriptor.
    void avoid_read_ahead() const override;

private:
    FileSource(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

    std::string path_;
    UniqueFd fd_;
    std::uint64_t size_ = 0;
    std::uint64_t block_size_ = 0;  ///< st_blksize of a regular file (0 if it gave none)
    std::uint64_t held_ = 0;        ///< st_blocks · 512 of a regular file, size_ otherwise
    bool block_device_ = false;
};

/// The part of `within` (clipped to [0, size)) that the open regular file `fd` stores on
/// the host, found with SEEK_DATA/SEEK_HOLE. When the host file system cannot report holes,
/// all of it counts as stored. Moves the descriptor's file offset (callers that share `fd`
/// must use pread()). Throws Error(Io) when lseek fails for a reason other than "no holes
/// support". Cost: an lseek pair per stored range meeting `within`, one lseek per interval
/// of `within` that begins in a hole: a file of hundreds of thousands of ranges is not
/// walked whole for a few.
[[nodiscard]] ByteSet host_stored_ranges(int fd, std::uint64_t size, const ByteSet& within);

/// host_stored_ranges over the whole file, [0, size).
[[nodiscard]] ByteSet host_stored_ranges(int fd, std::uint64_t size);

/// host_stored_ranges over the whole file, each range widened to whole `granule`s (clipped
/// to size): the allocation a layer reports.
[[nodiscard]] ByteSet host_allocation(int fd, std::uint64_t size, std::uint64_t granule);

/// Bytes in memory as a source: a whole container built by a test, or a fuzzer's input
/// without a round trip through a file.
class MemorySource final : public ByteSource {
public:
    /// Which ranges hold data, for a source standing in for a sparse host file.
    struct Allocation {
        std::uint64_t unit = 512;  ///< what allocation_unit() reports
        ByteSet stored;            ///< ranges holding data; the rest are holes
    };

    /// Shares ownership of `bytes`. With `allocation`, stored_ranges() answers from it;
    /// without, every byte counts as stored.
    MemorySource(std::string name, std::shared_ptr<const std::vector<std::byte>> bytes,
                 std::optional<Allocation> allocation = std::nullopt);

    /// Views `bytes` without copying; the caller keeps them alive as long as the source
    /// (a fuzzer's input outlives the one call that reads it).
    MemorySource(std::string name, std::span<const std::byte> bytes);

    [[nodiscard]] const std::string& name() const noexcept override { return name_; }
    [[nodiscard]] std::uint64_t size() const noexcept override { return bytes_.size(); }
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override;
    [[nodiscard]] std::optional<std::uint64_t> allocation_unit() const override;
    [[nodiscard]] ByteSet stored_ranges(std::uint64_t granule) const override;

private:
    std::string name_;
    std::shared_ptr<const std::vector<std::byte>> owned_;  ///< null when viewing
    std::span<const std::byte> bytes_;
    std::optional<Allocation> allocation_;
};

/// What FaultySource does wrong.
struct Faults {
    /// [first, second) byte ranges whose reading fails as an EIO would.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> failing;
    std::size_t max_read = 0;  ///< most bytes one read_at transfers (0: no limit)
    /// The data ends here, though size() still reports the size at opening: a file
    /// truncated between size() and a read.
    std::optional<std::uint64_t> shrink_to;
};

/// Wraps a source and misbehaves on purpose (short reads, EIO in a range, a file that
/// shrinks while open), the way qemu's blkdebug sits between a format and its file, so
/// tests can check that each reader turns those into typed errors.
class FaultySource final : public ByteSource {
public:
    FaultySource(std::shared_ptr<const ByteSource> inner, Faults faults);

    [[nodiscard]] const std::string& name() const noexcept override { return inner_->name(); }
    [[nodiscard]] std::uint64_t size() const noexcept override { return inner_->size(); }
    /// Throws read_error(EIO) when [offset, offset + out.size()) meets a failing range
    /// (at the first failing byte), else forwards a read clipped by max_read/shrink_to.
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override;
    [[nodiscard]] std::optional<std::uint64_t> allocation_unit() const override { return inner_->allocation_unit(); }
    [[nodiscard]] ByteSet stored_ranges(std::uint64_t granule) const override { return inner_->stored_ranges(granule); }
    [[nodiscard]] bool is_block_device() const noexcept override { return inner_->is_block_device(); }
    [[nodiscard]] PhysicalFile physical_layout() const override { return inner_->physical_layout(); }

private:
    std::shared_ptr<const ByteSource> inner_;
    Faults faults_;
};

}  // namespace guestfrag
