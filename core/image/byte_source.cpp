// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/byte_source.hpp"

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace guestfrag {
namespace {

std::uint64_t round_down(std::uint64_t value, std::uint64_t unit) { return value - value % unit; }

std::uint64_t round_up(std::uint64_t value, std::uint64_t unit) {
    const std::uint64_t rest = value % unit;
    return rest == 0 ? value : value + (unit - rest);
}

/// Adds [lo, hi) widened to whole granules and clipped to `size`: the host allocates in
/// blocks, so a partially written block is wholly stored.
void add_widened(ByteSet& set, std::uint64_t lo, std::uint64_t hi, std::uint64_t granule, std::uint64_t size) {
    const std::uint64_t end = std::min(round_up(hi, granule), size);
    const std::uint64_t begin = round_down(lo, granule);
    if (begin < end) set += ByteSet::interval_type::right_open(begin, end);
}

ByteSet everything(std::uint64_t size) {
    ByteSet all;
    if (size > 0) all += ByteSet::interval_type::right_open(0, size);
    return all;
}

}  // namespace

std::string errno_text(int error) {
    std::string text = std::strerror(error);
    if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    return text;
}

ReadCounters& read_counters() noexcept {
    static ReadCounters counters;
    return counters;
}

ByteSet ByteSource::stored_ranges(std::uint64_t) const { return everything(size()); }

PhysicalFile ByteSource::physical_layout() const {
    PhysicalFile out;
    out.path = name();
    out.note = "not a host file";
    return out;
}

Error read_error(std::uint64_t offset, int error) {
    return Error(ErrorKind::Io, "read failed at offset " + std::to_string(offset) + ": " + std::strerror(error));
}

void read_fully(const ByteSource& source, std::uint64_t offset, std::span<std::byte> out) {
    std::size_t done = 0;
    while (done < out.size()) {
        const std::size_t n = source.read_at(offset + done, out.subspan(done));
        if (n == 0) throw Error(ErrorKind::Io, "file shrank while reading it");
        done += n;
    }
}

// ---------------------------------------------------------------------------- FileSource

std::unique_ptr<FileSource> FileSource::try_open(std::string path, OpenFailure& failure) {
    using Step = OpenFailure::Step;
    const auto fail = [&](Step step, int error, bool directory = false) {
        failure = {step, error, directory};
        return std::unique_ptr<FileSource>();
    };
    // O_NONBLOCK only so that naming a FIFO cannot hang the open; cleared below.
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) return fail(Step::Open, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return fail(Step::Stat, errno);
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) return fail(Step::NotFileOrDevice, 0, S_ISDIR(st.st_mode));
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);

    std::unique_ptr<FileSource> source(new FileSource(std::move(path), std::move(fd)));
    if (S_ISBLK(st.st_mode)) {
        source->block_device_ = true;
        if (::ioctl(source->fd_.get(), BLKGETSIZE64, &source->size_) != 0) return fail(Step::Size, errno);
        source->held_ = source->size_;
    } else {
        source->size_ = static_cast<std::uint64_t>(st.st_size);
        source->block_size_ = st.st_blksize > 0 ? static_cast<std::uint64_t>(st.st_blksize) : 0;
        // Some file systems (FUSE, network) report no blocks at all: then the size stands.
        const auto blocks = static_cast<std::uint64_t>(st.st_blocks) * 512;
        source->held_ = blocks != 0 ? blocks : source->size_;
    }
    return source;
}

std::unique_ptr<FileSource> FileSource::open(std::string path) {
    OpenFailure failure;
    if (auto source = try_open(path, failure)) return source;
    const auto io = [&](const char* verb) {
        return Error(ErrorKind::Io, std::string(verb) + " " + path + ": " + std::strerror(failure.error));
    };
    switch (failure.step) {
        case OpenFailure::Step::Open:
            if (failure.error == ENOENT) throw Error(ErrorKind::NotFound, "no such file: " + path);
            throw io("cannot open");
        case OpenFailure::Step::Stat: throw io("cannot stat");
        case OpenFailure::Step::NotFileOrDevice:
            throw Error(ErrorKind::Unsupported, path + " is not a regular file or block device");
        case OpenFailure::Step::Size: throw io("cannot size");
    }
    throw Error(ErrorKind::Internal, "unhandled open failure");
}

void FileSource::avoid_read_ahead() const { (void)::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_RANDOM); }

std::size_t FileSource::read_at(std::uint64_t offset, std::span<std::byte> out) const {
    // Linux transfers at most about 2 GiB per pread(); ask for no more than 1 GiB.
    constexpr std::size_t max_chunk = std::size_t{1} << 30;
    const std::size_t want = std::min(out.size(), max_chunk);
    while (true) {
        const ssize_t n = ::pread(fd_.get(), out.data(), want, static_cast<off_t>(offset));
        if (n >= 0) {
            ReadCounters& counters = read_counters();
            counters.file_requests.fetch_add(1, std::memory_order_relaxed);
            counters.file_bytes.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
            return static_cast<std::size_t>(n);
        }
        if (errno != EINTR) throw read_error(offset, errno);
    }
}

std::optional<std::uint64_t> FileSource::allocation_unit() const {
    if (block_device_) return std::nullopt;  // a block device shows no holes
    return block_size_ > 0 ? block_size_ : 512;
}

ByteSet FileSource::stored_ranges(std::uint64_t granule) const {
    if (block_device_) return everything(size_);
    return host_allocation(fd_.get(), size_, granule);
}

PhysicalFile FileSource::physical_layout() const {
    PhysicalFile out;
    out.path = path_;
    if (block_device_) {
        out.note = "a block device: its bytes are the device's own";
        return out;
    }
    // A batch of extents per ioctl; the kernel fills at most fm_extent_count of them.
    constexpr std::uint32_t kBatch = 256;
    // struct fiemap ends in a flexible array: one 8-byte-aligned buffer holds it and its extents.
    constexpr std::size_t kBytes = sizeof(struct fiemap) + kBatch * sizeof(struct fiemap_extent);
    std::vector<std::uint64_t> buffer((kBytes + 7) / 8);
    auto* map = reinterpret_cast<struct fiemap*>(buffer.data());
    std::uint64_t start = 0;
    while (start < size_) {
        std::fill(buffer.begin(), buffer.end(), 0);
        map->fm_start = start;
        map->fm_length = size_ - start;
        map->fm_extent_count = kBatch;
        if (::ioctl(fd_.get(), FS_IOC_FIEMAP, map) < 0) {
            const int err = errno;
            // tmpfs, overlay on some kernels, network file systems: they cannot tell.
            if (err == EOPNOTSUPP || err == ENOTTY || err == EINVAL) {
                out.extents.clear();
                out.unplaced_extents = 0;
                out.note = "the host file system cannot report physical extents (FIEMAP: " + errno_text(err) + ")";
                return out;
            }
            throw Error(ErrorKind::Io, "cannot map physical extents: " + errno_text(err));
        }
        const std::uint32_t n = std::min(map->fm_mapped_extents, kBatch);
        if (n == 0) break;
        bool last = false;
        std::uint64_t next = start;
        for (std::uint32_t i = 0; i < n; ++i) {
            const struct fiemap_extent& e = map->fm_extents[i];
            last = last || (e.fe_flags & FIEMAP_EXTENT_LAST) != 0;
            next = std::max<std::uint64_t>(next, e.fe_logical + e.fe_length);
            if (e.fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC))
                ++out.unplaced_extents;
            else
                out.extents.push_back({e.fe_logical, e.fe_physical, e.fe_length});
        }
        // Never loop on an answer that makes no progress.
        if (last || next <= start) break;
        start = next;
    }
    return out;
}

ByteSet host_stored_ranges(int fd, std::uint64_t size, const ByteSet& within) {
    const auto failed = [](int err) {
        return Error(ErrorKind::Io, "cannot map host allocation: " + errno_text(err));
    };
    ByteSet out;
    // `at`: where the file is known to hold nothing more of interest before. An interval
    // that SEEK_DATA finds to be a hole costs one call and moves `at` past every later
    // interval that hole covers too.
    std::uint64_t at = 0;
    for (const auto& w : within) {
        const std::uint64_t end = std::min<std::uint64_t>(w.upper(), size);
        at = std::max<std::uint64_t>(at, w.lower());
        while (at < end) {
            const off_t data = ::lseek(fd, static_cast<off_t>(at), SEEK_DATA);
            if (data < 0) {
                const int err = errno;
                if (err == ENXIO) return out & within;  // nothing stored from `at` on
                // Kernels or file systems without hole reporting: every byte counts as stored.
                if (err != EINVAL && err != ENOTSUP && err != EOPNOTSUPP) throw failed(err);
                out += ByteSet::interval_type::right_open(at, size);
                return out & within;
            }
            const auto data_start = static_cast<std::uint64_t>(data);
            if (data_start >= end) {
                at = data_start;
                break;
            }
            const off_t hole = ::lseek(fd, data, SEEK_HOLE);
            std::uint64_t data_end = size;
            if (hole >= 0)
                data_end = std::min<std::uint64_t>(static_cast<std::uint64_t>(hole), size);
            else if (errno != ENXIO)  // ENXIO: the file shrank under us; take the rest as data
                throw failed(errno);
            if (data_end <= data_start) return out & within;  // never loop on an inconsistent answer
            out += ByteSet::interval_type::right_open(data_start, data_end);
            at = data_end;
        }
    }
    return out & within;
}

ByteSet host_stored_ranges(int fd, std::uint64_t size) {
    return host_stored_ranges(fd, size, everything(size));
}

ByteSet host_allocation(int fd, std::uint64_t size, std::uint64_t granule) {
    if (granule == 0) granule = 512;
    ByteSet allocated;
    for (const auto& r : host_stored_ranges(fd, size))
        add_widened(allocated, r.lower(), r.upper(), granule, size);
    return allocated;
}

// -------------------------------------------------------------------------- MemorySource

MemorySource::MemorySource(std::string name, std::shared_ptr<const std::vector<std::byte>> bytes,
                           std::optional<Allocation> allocation)
    : name_(std::move(name)), owned_(std::move(bytes)), allocation_(std::move(allocation)) {
    if (!owned_) throw Error(ErrorKind::Internal, "memory source without bytes");
    bytes_ = *owned_;
}

MemorySource::MemorySource(std::string name, std::span<const std::byte> bytes)
    : name_(std::move(name)), bytes_(bytes) {}

std::size_t MemorySource::read_at(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset >= bytes_.size()) return 0;
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), bytes_.size() - offset));
    std::memcpy(out.data(), bytes_.data() + offset, n);
    return n;
}

std::optional<std::uint64_t> MemorySource::allocation_unit() const {
    if (!allocation_) return std::nullopt;
    return allocation_->unit;
}

ByteSet MemorySource::stored_ranges(std::uint64_t granule) const {
    if (!allocation_) return everything(size());
    if (granule == 0) granule = 512;
    ByteSet out;
    for (const auto& range : allocation_->stored) add_widened(out, range.lower(), range.upper(), granule, size());
    return out;
}

// -------------------------------------------------------------------------- FaultySource

FaultySource::FaultySource(std::shared_ptr<const ByteSource> inner, Faults faults)
    : inner_(std::move(inner)), faults_(std::move(faults)) {
    if (!inner_) throw Error(ErrorKind::Internal, "faulty source without an inner source");
}

std::size_t FaultySource::read_at(std::uint64_t offset, std::span<std::byte> out) const {
    if (faults_.shrink_to) {
        if (offset >= *faults_.shrink_to) return 0;
        out = out.first(static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), *faults_.shrink_to - offset)));
    }
    if (faults_.max_read > 0 && out.size() > faults_.max_read) out = out.first(faults_.max_read);
    const std::uint64_t end = offset + out.size();
    for (const auto& [lo, hi] : faults_.failing)
        if (!out.empty() && lo < end && offset < hi) throw read_error(std::max(lo, offset), EIO);
    return inner_->read_at(offset, out);
}

}  // namespace guestfrag
