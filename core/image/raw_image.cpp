// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/raw_image.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace guestfrag {

namespace {

/// strerror() text in our message style (lower-case first letter).
std::string errno_text(int err) {
    std::string text = std::strerror(err);
    if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    return text;
}

[[noreturn]] void throw_open_error(int err) {
    // ENOTDIR: a leading path component is a file, so the named file cannot exist either.
    if (err == ENOENT || err == ENOTDIR) throw Error(ErrorKind::NotFound, "no such file");
    if (err == EISDIR) throw Error(ErrorKind::Unsupported, "is a directory");
    throw Error(ErrorKind::Io, "cannot open: " + errno_text(err));
}

std::uint64_t round_down(std::uint64_t value, std::uint64_t unit) { return value - value % unit; }

std::uint64_t round_up(std::uint64_t value, std::uint64_t unit) {
    const std::uint64_t rest = value % unit;
    return rest == 0 ? value : value + (unit - rest);
}

}  // namespace

ByteSet host_allocation(int fd, std::uint64_t size, std::uint64_t granule) {
    if (granule == 0) granule = 512;
    ByteSet allocated;
    const auto everything = [&] {
        ByteSet all;
        if (size > 0) all += ByteSet::interval_type::right_open(0, size);
        return all;
    };
    std::uint64_t pos = 0;
    while (pos < size) {
        const off_t data = ::lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
        if (data < 0) {
            const int err = errno;
            if (err == ENXIO) break;  // no data at or after pos: the rest is a hole
            // Kernels or file systems without hole reporting: every byte counts as stored.
            if (err == EINVAL || err == ENOTSUP || err == EOPNOTSUPP) return everything();
            throw Error(ErrorKind::Io, "cannot map host allocation: " + errno_text(err));
        }
        const auto data_start = static_cast<std::uint64_t>(data);
        if (data_start >= size) break;
        const off_t hole = ::lseek(fd, data, SEEK_HOLE);
        std::uint64_t data_end = size;
        if (hole >= 0) {
            data_end = std::min<std::uint64_t>(static_cast<std::uint64_t>(hole), size);
        } else if (errno != ENXIO) {  // ENXIO: the file shrank under us; take the rest as data
            throw Error(ErrorKind::Io, "cannot map host allocation: " + errno_text(errno));
        }
        if (data_end <= data_start) break;  // never loop forever on an inconsistent answer
        // Host blocks are the allocation unit: a partially written block is wholly stored.
        allocated += ByteSet::interval_type::right_open(round_down(data_start, granule),
                                                        std::min(round_up(data_end, granule), size));
        pos = data_end;
    }
    return allocated;
}

RawImage::RawImage(std::string path) : path_(std::move(path)) {
    // O_NONBLOCK only so that naming a FIFO cannot hang the open; it is cleared below.
    fd_.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd_) throw_open_error(errno);

    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) throw Error(ErrorKind::Io, "cannot stat: " + errno_text(errno));
    if (S_ISDIR(st.st_mode)) throw Error(ErrorKind::Unsupported, "is a directory");
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        throw Error(ErrorKind::Unsupported, "not a regular file or block device");
    const int flags = ::fcntl(fd_.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd_.get(), F_SETFL, flags & ~O_NONBLOCK);

    Layer layer;
    layer.depth = 0;
    layer.path = path_;
    layer.format = "raw";
    if (S_ISBLK(st.st_mode)) {
        block_device_ = true;
        std::uint64_t bytes = 0;
        if (::ioctl(fd_.get(), BLKGETSIZE64, &bytes) != 0)
            throw Error(ErrorKind::Io, "cannot get block device size: " + errno_text(errno));
        size_ = bytes;
        // A block device has no holes we could see; every sector is "stored".
        layer.granule_size = 512;
        if (size_ > 0) layer.allocated += ByteSet::interval_type::right_open(0, size_);
    } else {
        size_ = static_cast<std::uint64_t>(st.st_size);
        layer.granule_size = st.st_blksize > 0 ? static_cast<std::uint64_t>(st.st_blksize) : 512;
        if (size_ > 0) layer.allocated = host_allocation(fd_.get(), size_, layer.granule_size);
    }
    if (size_ == 0) throw Error(ErrorKind::Corrupt, "empty image (0 bytes)");
    layer.growth_unit = layer.granule_size;
    // A raw disk is its own file: every stored range lies at its own offset.
    for (const auto& stored : layer.allocated)
        layer.host_extents.push_back({stored.lower(), stored.lower(), stored.upper() - stored.lower(), 0});
    layers_.push_back(std::move(layer));
}

void RawImage::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset > size_ || out.size() > size_ - offset) {
        throw Error(ErrorKind::Corrupt, "read past end of disk (offset " + std::to_string(offset) +
                                            ", length " + std::to_string(out.size()) + ", disk size " +
                                            std::to_string(size_) + ")");
    }
    if (out.empty()) return;
    // Host holes found at open read as zeros without asking the kernel: pread() of a hole
    // copies zero pages one by one, several times slower than memset. This is how
    // qemu-img reads sparse raw files too (block status first, then only the data).
    const std::uint64_t end = offset + out.size();
    const ByteSet& stored = layers_.front().allocated;
    std::uint64_t pos = offset;
    const auto [first, last] = stored.equal_range(ByteSet::interval_type::right_open(offset, end));
    for (auto it = first; it != last; ++it) {
        const std::uint64_t lo = std::max(it->lower(), offset);
        const std::uint64_t hi = std::min(it->upper(), end);
        if (lo > pos) std::memset(out.data() + (pos - offset), 0, static_cast<std::size_t>(lo - pos));
        pread_exact(lo, out.subspan(static_cast<std::size_t>(lo - offset), static_cast<std::size_t>(hi - lo)));
        pos = hi;
    }
    if (pos < end) std::memset(out.data() + (pos - offset), 0, static_cast<std::size_t>(end - pos));
}

void RawImage::pread_exact(std::uint64_t offset, std::span<std::byte> out) const {
    // pread() may transfer less than asked (and at most ~2 GiB on Linux): loop until done.
    constexpr std::size_t max_chunk = std::size_t{1} << 30;
    std::size_t done = 0;
    while (done < out.size()) {
        const std::size_t want = std::min(out.size() - done, max_chunk);
        const ssize_t got = ::pread(fd_.get(), out.data() + done, want, static_cast<off_t>(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            throw Error(ErrorKind::Io,
                        "cannot read at offset " + std::to_string(offset + done) + ": " + errno_text(errno));
        }
        if (got == 0) {
            // size_ was taken at open time; a file truncated since then ends early.
            throw Error(ErrorKind::Io, "unexpected end of file at offset " + std::to_string(offset + done) +
                                           " (the image shrank while open)");
        }
        done += static_cast<std::size_t>(got);
    }
}

}  // namespace guestfrag
