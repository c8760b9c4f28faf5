// SPDX-License-Identifier: GPL-2.0-or-later
// ntfs_device_operations over a window of a disk. Mirrors libntfs-3g's unix_io.c minus what
// only matters for block devices (locking, ioctls, geometry).
#include "core/ntfs/ntfs_device.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/writable_disk.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_volume.hpp"

namespace guestfrag::ntfs {

namespace {

/// A write-back cache of a writable disk's 4 KiB pages for libntfs-3g's small transfers.
/// libntfs-3g edits $Bitmap a byte at a time and MFT records a record at a time, each
/// through its own pread or pwrite: moving a million files cost 1.2 million system calls of
/// that size. Transfers smaller than a page are served here and their pages written back
/// on sync, close and eviction; larger ones (cluster copies) go to the disk and keep the
/// cached pages in step, so every read sees every earlier write.
/// Pages are aligned on the disk, not the volume, and a write-back starts and ends where the
/// changes do: the bytes it writes lie in changed pages, so they never reach a host block
/// of 4 KiB or more (file system block, qcow2 cluster, VMDK grain) that the writes
/// themselves did not, and the output's allocation is what it was without the cache. A
/// mover walking $MFT in record order misses page after page: a miss right after the page
/// before is read with the pages after it (kBatch), and a run of changed pages goes back in
/// one write, the unchanged records between their changes with them (the cache holds them
/// as the disk does), so that the million-file volume's records cost thousands of system
/// calls, not a million.
class PageCache {
public:
    static constexpr std::uint64_t kPage = 4096;
    static constexpr std::size_t kCapacity = 1024;  // 4 MiB: all of $Bitmap for 128 GiB of 4 KiB clusters
    static constexpr std::uint64_t kBatch = 32;     // pages read at once by a run of misses: 128 KiB

    /// Caches disk bytes [begin, end) of `file`.
    PageCache(WritableDisk& file, std::uint64_t begin, std::uint64_t end) : file_(file), begin_(begin), end_(end) {}

    void read(std::uint64_t at, std::span<std::byte> out) {
        if (out.size() >= kPage) {
            file_.read(at, out);
            for_cached(at, out.size(), [&](std::uint64_t start, const Page& page) {
                if (page.dirty_hi > page.dirty_lo) copy(page, start, page.dirty_lo, page.dirty_hi, at, out);
            });
            return;
        }
        for (std::uint64_t index = at / kPage; index * kPage < at + out.size(); ++index) {
            const Page& page = load(index);
            copy(page, index * kPage, 0, kPage, at, out);
        }
    }

    void write(std::uint64_t at, std::span<const std::byte> in) {
        if (in.size() >= kPage) {
            file_.write(at, in);
            for_cached(at, in.size(), [&](std::uint64_t start, Page& page) { overwrite(page, start, at, in); });
            return;
        }
        for (std::uint64_t index = at / kPage; index * kPage < at + in.size(); ++index) {
            Page& page = load(index);
            const auto [lo, hi] = overwrite(page, index * kPage, at, in);
            page.dirty_lo = std::min(page.dirty_lo, lo);
            page.dirty_hi = std::max(page.dirty_hi, hi);
        }
    }

    /// Whether a change not written back yet touches [at, at + n).
    [[nodiscard]] bool changed_within(std::uint64_t at, std::uint64_t n) {
        bool changed = false;
        for_cached(at, n, [&](std::uint64_t, const Page& page) {
            changed = changed || page.dirty_hi > page.dirty_lo;
        });
        return changed;
    }

    /// Writes every changed byte back, in disk order.
    void flush() {
        for (auto it = pages_.begin(); it != pages_.end(); ++it) it = write_back(it);
    }

private:
    struct Page {
        std::array<std::byte, kPage> bytes{};
        std::uint64_t dirty_lo = kPage;  ///< the changed span, empty when dirty_hi <= dirty_lo
        std::uint64_t dirty_hi = 0;
        std::list<std::uint64_t>::iterator use;  ///< its place in use_
    };

    /// Copies the page's bytes [lo, hi) (page offsets) that fall in `out` (at disk offset `at`).
    static void copy(const Page& page, std::uint64_t start, std::uint64_t lo, std::uint64_t hi, std::uint64_t at,
                     std::span<std::byte> out) {
        const std::uint64_t from = std::max(start + lo, at);
        const std::uint64_t to = std::min(start + hi, at + out.size());
        if (from < to) std::memcpy(out.data() + (from - at), page.bytes.data() + (from - start), to - from);
    }

    /// Puts the bytes of `in` (at disk offset `at`) that fall in the page; returns the page
    /// offsets written.
    static std::pair<std::uint64_t, std::uint64_t> overwrite(Page& page, std::uint64_t start, std::uint64_t at,
                                                             std::span<const std::byte> in) {
        const std::uint64_t from = std::max(start, at);
        const std::uint64_t to = std::min(start + kPage, at + in.size());
        std::memcpy(page.bytes.data() + (from - start), in.data() + (from - at), to - from);
        return {from - start, to - start};
    }

    /// Calls f(page start, page) for each cached page that overlaps [at, at + n).
    template <typename F>
    void for_cached(std::uint64_t at, std::uint64_t n, F&& f) {
        for (auto it = pages_.lower_bound(at / kPage); it != pages_.end() && it->first * kPage < at + n; ++it)
            f(it->first * kPage, it->second);
    }

    /// The page, read from the disk when it is not cached (with up to kBatch - 1 uncached
    /// pages after it when the page before it was the last miss); the least recently used
    /// page makes room for each.
    Page& load(std::uint64_t index) {
        if (const auto found = pages_.find(index); found != pages_.end()) {
            use_.splice(use_.begin(), use_, found->second.use);
            return found->second;
        }
        std::uint64_t count = 1;
        if (index == last_miss_ + 1)
            while (count < kBatch && (index + count) * kPage < end_ && !pages_.contains(index + count))
                ++count;
        last_miss_ = index + count - 1;
        const std::uint64_t from = std::max(index * kPage, begin_);
        const std::uint64_t to = std::min((index + count) * kPage, end_);
        read_buffer_.assign(count * kPage, std::byte{0});  // outside the window: zeros
        file_.read(from, std::span(read_buffer_).subspan(from - index * kPage, to - from));
        // Later pages first, so that the one asked for is the most recently used.
        for (std::uint64_t i = count; i-- > 0;) {
            while (pages_.size() >= kCapacity) evict();
            const auto [it, added] = pages_.try_emplace(index + i);
            std::memcpy(it->second.bytes.data(), read_buffer_.data() + i * kPage, kPage);
            use_.push_front(index + i);
            it->second.use = use_.begin();
        }
        return pages_.find(index)->second;
    }

    /// Writes the least recently used page back and drops it.
    void evict() {
        const auto victim = pages_.find(use_.back());
        (void)write_back(victim);
        use_.pop_back();
        pages_.erase(victim);
    }

    /// Writes back the page at `at` together with the changed pages next to it on the disk,
    /// from the first change to the last in one write; returns the last page written (`at`
    /// when it held no change). A record left alone between two changed ones goes back too:
    /// a mover changes most records of the files it moves, but not all.
    std::map<std::uint64_t, Page>::iterator write_back(std::map<std::uint64_t, Page>::iterator at) {
        const auto dirty = [](const Page& p) { return p.dirty_hi > p.dirty_lo; };
        // Whether `next` is the changed page right after the changed page `prev`.
        const auto joins = [&](const auto& prev, const auto& next) {
            return next->first == prev->first + 1 && dirty(prev->second) && dirty(next->second);
        };
        if (!dirty(at->second)) return at;
        auto first = at;
        while (first != pages_.begin() && joins(std::prev(first), first)) --first;
        auto last = at;
        for (auto next = std::next(last); next != pages_.end() && joins(last, next); ++next) last = next;
        const std::uint64_t lo = first->first * kPage + first->second.dirty_lo;
        const std::uint64_t hi = last->first * kPage + last->second.dirty_hi;
        written_.resize(hi - lo);
        const auto end = std::next(last);
        for (auto it = first; it != end; ++it) {
            // The whole page, but where the run starts and ends: those may be off the window.
            const std::uint64_t start = it->first * kPage;
            const std::uint64_t from = std::max(start, lo);
            const std::uint64_t to = std::min(start + kPage, hi);
            std::memcpy(written_.data() + (from - lo), it->second.bytes.data() + (from - start), to - from);
        }
        file_.write(lo, std::span<const std::byte>(written_.data(), hi - lo));
        // Clean only once written: a failed write-back is tried again at the next sync or close.
        for (auto it = first; it != end; ++it) {
            it->second.dirty_lo = kPage;
            it->second.dirty_hi = 0;
        }
        return last;
    }

    WritableDisk& file_;
    std::uint64_t begin_;
    std::uint64_t end_;
    std::map<std::uint64_t, Page> pages_;  ///< by page index (disk offset / kPage)
    std::list<std::uint64_t> use_;         ///< page indices, most recently used first
    std::uint64_t last_miss_ = ~std::uint64_t{0};  ///< the last page load() read
    std::vector<std::byte> read_buffer_;           ///< load()'s reads
    std::vector<std::byte> written_;               ///< write_back()'s writes (it runs inside load())
};

}  // namespace

/// What a device's operations work on (its d_private): exactly one of image and file.
struct Device::Window {
    const DiskImage* image = nullptr;  ///< read-only devices
    WritableDisk* file = nullptr;      ///< writable devices
    std::uint64_t offset = 0;          ///< bytes
    std::uint64_t length = 0;          ///< bytes
    std::int64_t position = 0;         ///< for the seek/read/write calls
    std::unique_ptr<PageCache> cache;  ///< over file, for writable devices

    void read(std::uint64_t pos, std::span<std::byte> out) const {
        if (cache)
            cache->read(offset + pos, out);
        else
            image->read(offset + pos, out);
    }
};

// The one set of ntfs_device_operations. A friend of Device for its Window.
struct DeviceOperations {
    static Device::Window& window(ntfs_device* dev) { return *static_cast<Device::Window*>(dev->d_private); }

    /// Clamps a transfer to the window; -1 with EINVAL for negative positions.
    static s64 clamp(const Device::Window& w, s64 count, s64 pos) {
        if (pos < 0 || count < 0) {
            errno = EINVAL;
            return -1;
        }
        const auto length = static_cast<s64>(w.length);
        if (pos >= length) return 0;  // the end of the volume reads as EOF, like a file
        return count < length - pos ? count : length - pos;
    }

    static int open(ntfs_device* dev, int flags) {
        if (NDevOpen(dev)) {
            errno = EBUSY;
            return -1;
        }
        if ((flags & O_ACCMODE) != O_RDONLY && window(dev).file == nullptr) {
            errno = EROFS;
            return -1;
        }
        if ((flags & O_ACCMODE) != O_RDWR) NDevSetReadOnly(dev);
        NDevSetOpen(dev);
        return 0;
    }

    static int close(ntfs_device* dev) {
        if (!NDevOpen(dev)) {
            errno = EBADF;
            return -1;
        }
        NDevClearOpen(dev);
        return flush(dev);
    }

    /// Writes the cached changes back: 0, or -1 with EIO.
    static int flush(ntfs_device* dev) {
        const Device::Window& w = window(dev);
        if (!w.cache) return 0;
        try {
            w.cache->flush();
        } catch (const Error& e) {
            note_device_failure(e.what());
            errno = EIO;
            return -1;
        }
        return 0;
    }

    static s64 pread(ntfs_device* dev, void* buf, s64 count, s64 pos) {
        const Device::Window& w = window(dev);
        const s64 n = clamp(w, count, pos);
        if (n <= 0) return n;
        try {
            w.read(static_cast<std::uint64_t>(pos), std::span(static_cast<std::byte*>(buf), static_cast<std::size_t>(n)));
        } catch (const Error& e) {
            note_device_failure(e.what());
            errno = EIO;  // libntfs-3g only knows errno; its caller reports the failure
            return -1;
        }
        return n;
    }

    static s64 pwrite(ntfs_device* dev, const void* buf, s64 count, s64 pos) {
        const Device::Window& w = window(dev);
        if (NDevReadOnly(dev) || w.file == nullptr) {
            errno = EROFS;
            return -1;
        }
        const s64 n = clamp(w, count, pos);
        if (n < 0) return n;
        if (n == 0 && count > 0) {
            errno = ENOSPC;  // past the end of the volume
            return -1;
        }
        NDevSetDirty(dev);
        try {
            w.cache->write(w.offset + static_cast<std::uint64_t>(pos),
                           std::span(static_cast<const std::byte*>(buf), static_cast<std::size_t>(n)));
        } catch (const Error& e) {
            note_device_failure(e.what());
            errno = EIO;
            return -1;
        }
        return n;
    }

    static s64 seek(ntfs_device* dev, s64 offset, int whence) {
        Device::Window& w = window(dev);
        s64 base = 0;
        if (whence == SEEK_CUR)
            base = w.position;
        else if (whence == SEEK_END)
            base = static_cast<s64>(w.length);
        else if (whence != SEEK_SET) {
            errno = EINVAL;
            return -1;
        }
        if (base + offset < 0) {
            errno = EINVAL;
            return -1;
        }
        w.position = base + offset;
        return w.position;
    }

    static s64 read(ntfs_device* dev, void* buf, s64 count) {
        const s64 n = pread(dev, buf, count, window(dev).position);
        if (n > 0) window(dev).position += n;
        return n;
    }

    static s64 write(ntfs_device* dev, const void* buf, s64 count) {
        const s64 n = pwrite(dev, buf, count, window(dev).position);
        if (n > 0) window(dev).position += n;
        return n;
    }

    // The cached changes go to the disk, but no fsync: a read-only device has nothing to
    // flush, and a generated image is reproducible from its options while one fsync of
    // gigabytes would double the run time on slow disks (apply syncs its output itself). The
    // kernel's page cache serves every later reader.
    static int sync(ntfs_device* dev) {
        if (flush(dev) != 0) return -1;
        NDevClearDirty(dev);
        return 0;
    }

    static int stat(ntfs_device* dev, struct stat* st) {
        const Device::Window& w = window(dev);
        std::memset(st, 0, sizeof *st);
        st->st_mode = S_IFREG | (w.file != nullptr ? 0644 : 0444);
        st->st_size = static_cast<off_t>(w.length);
        return 0;
    }

    // Not a block device: libntfs-3g falls back to seek/stat and the boot sector's values.
    static int ioctl(ntfs_device*, unsigned long, void*) {
        errno = ENOTTY;
        return -1;
    }

    static inline ntfs_device_operations table = {
        open, close, seek, read, write, pread, pwrite, sync, stat, ioctl,
    };

    static bool copied_ahead(ntfs_device* dev, std::uint64_t to, std::uint64_t from, std::uint64_t length) {
        if (dev == nullptr || dev->d_ops != &table) return false;
        const Device::Window& w = window(dev);
        if (w.file == nullptr || to + length > w.length || from + length > w.length) return false;
        return !w.cache->changed_within(w.offset + to, length) &&
               !w.cache->changed_within(w.offset + from, length) &&
               w.file->copied_ahead(w.offset + to, w.offset + from, length);
    }
};

bool copied_ahead(ntfs_device* dev, std::uint64_t to, std::uint64_t from, std::uint64_t length) {
    return DeviceOperations::copied_ahead(dev, to, from, length);
}

void Device::Free::operator()(ntfs_device* device) const noexcept {
    // Only devices no volume took over get here, and a failed mount closes what it opened:
    // ntfs_device_free never meets an open device.
    if (device != nullptr) ntfs_device_free(device);
}

Device::Device(std::unique_ptr<Window> window) : window_(std::move(window)) {
    const std::string& path = window_->file != nullptr ? window_->file->path() : window_->image->path();
    const std::string name = path + "@" + std::to_string(window_->offset);
    device_.reset(ntfs_device_alloc(name.c_str(), 0, &DeviceOperations::table, window_.get()));
    if (!device_) throw Error(ErrorKind::Internal, "cannot allocate an ntfs device");
}

Device::Device(const DiskImage& image, std::uint64_t offset, std::uint64_t length)
    : Device(std::make_unique<Window>(Window{&image, nullptr, offset, length, 0, nullptr})) {}

Device::Device(WritableDisk& file, std::uint64_t offset, std::uint64_t length)
    : Device(std::make_unique<Window>(
          Window{nullptr, &file, offset, length, 0, std::make_unique<PageCache>(file, offset, offset + length)})) {}

Device::~Device() = default;
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;

bool Device::writable() const noexcept { return window_->file != nullptr; }

}  // namespace guestfrag::ntfs
