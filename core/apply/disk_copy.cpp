// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/disk_copy.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/read_window.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/io/zero_bytes.hpp"
#include "core/plan/intervals.hpp"

namespace guestfrag {
namespace {

/// The copy's buffer, the most one read or write moves: 128 KiB, cp's own, so that the
/// bytes a read brought in are still in the processor's cache when the write copies them
/// into the page cache. With 1 MiB the write read them back from memory, and the copy of the
/// 1M-file volume took 9-22 % longer (docs/benchmarks.md, "The copy's buffer").
constexpr std::uint64_t kBlock = 128 << 10;

[[noreturn]] void host_failure(const std::string& what) {
    throw Error(ErrorKind::Io, what + ": " + std::strerror(errno));
}

/// Writes `length` bytes from `data` at `at` of `fd`.
void write_all(int fd, const std::byte* data, std::uint64_t length, std::uint64_t at) {
    for (std::uint64_t done = 0; done < length;) {
        const ssize_t n = ::pwrite(fd, data + done, length - done, static_cast<off_t>(at + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) host_failure("cannot write the new disk");
        done += static_cast<std::uint64_t>(n);
    }
}

/// The disk offset of cluster `lcn` of `map`'s volume.
std::uint64_t disk_offset(const VolumeMap& map, std::int64_t lcn) {
    return map.partition_offset + static_cast<std::uint64_t>(lcn) * map.cluster_size;
}

/// A set's intervals in a vector, for many lookups: a binary search of it reads a few
/// cache lines where one of the set's tree follows a pointer a level.
class FlatSet {
public:
    explicit FlatSet(const ByteSet& set) {
        spans_.reserve(boost::icl::interval_count(set));
        for (const auto& i : set) spans_.push_back({i.lower(), i.upper()});
    }
    /// Whether the set meets [lo, hi).
    [[nodiscard]] bool intersects(std::uint64_t lo, std::uint64_t hi) const {
        const auto it = std::ranges::upper_bound(spans_, lo, {}, &DiskRange::hi);
        return lo < hi && it != spans_.end() && it->lo < hi;
    }

private:
    std::vector<DiskRange> spans_;
};

}  // namespace

ByteSet moved_bytes(const VolumeMap& map, const Plan& plan, std::int64_t Move::*end) {
    // Sorted and joined before they go into the set, each at its end: a million moves'
    // sources added one by one, each a search of the set's tree and a join, took 0.45 s of
    // apply's 1M-file optimize plan before its copy could begin.
    PendingRanges<std::uint64_t> ranges;
    for (const Move& m : plan.moves) {
        const std::uint64_t at = disk_offset(map, m.*end);
        if (m.clusters > 0) ranges.add(at, at + static_cast<std::uint64_t>(m.clusters) * map.cluster_size);
    }
    ByteSet out;
    ranges.give_to([&out](std::uint64_t lo, std::uint64_t hi) {
        out.insert(out.end(), ByteSet::interval_type::right_open(lo, hi));
    });
    return out;
}

namespace {

/// The virtual-disk bytes of the streams of `map` that `pick` picks.
template <typename Pick>
ByteSet stream_bytes(const VolumeMap& map, Pick pick) {
    ByteSet out;
    for (const Stream& s : map.streams)
        if (pick(s))
            for (const Extent& e : s.extents)
                if (e.lcn != Extent::kSparse) {
                    const std::uint64_t at = disk_offset(map, e.lcn);
                    out += ByteSet::interval_type::right_open(
                        at, at + static_cast<std::uint64_t>(e.clusters) * map.cluster_size);
                }
    return out;
}

}  // namespace

ByteSet mft_bytes(const VolumeMap& map) {
    return stream_bytes(map, [](const Stream& s) {
        return s.mft_record == 0 && s.type == static_cast<std::uint32_t>(AttrType::Data) && s.name.empty();
    });
}

ByteSet pinned_bytes(const VolumeMap& map) {
    return stream_bytes(map, [](const Stream& s) { return s.placement != Placement::Movable; });
}

std::vector<Relocation> moves_to_copy_ahead(const VolumeMap& map, const Plan& plan, const ByteSet& keep,
                                            const ByteSet& free) {
    std::vector<Relocation> out;
    out.reserve(plan.moves.size());
    {
        const FlatSet kept(keep);
        const FlatSet was_free(free);
        for (const Move& m : plan.moves) {
            const Relocation r{disk_offset(map, m.to_lcn), disk_offset(map, m.from_lcn),
                               static_cast<std::uint64_t>(m.clusters) * map.cluster_size};
            if (!kept.intersects(r.to, r.to + r.length) && !was_free.intersects(r.from, r.from + r.length))
                out.push_back(r);
        }
    }
    // Skipped when the moves come in the order of their destinations already.
    if (!std::ranges::is_sorted(out, {}, &Relocation::to)) std::ranges::stable_sort(out, {}, &Relocation::to);
    // Kept in place: a million moves' pieces are 21 MB, held beside the plan's maps while
    // apply's rehearsal runs, and a second vector of them raised apply's peak.
    auto kept = out.begin();
    for (const Relocation& r : out)
        if (kept == out.begin() || r.to >= std::prev(kept)->to + std::prev(kept)->length) *kept++ = r;
    out.erase(kept, out.end());
    return out;
}

SparseCopy copy_disk_sparse(const DiskImage& image, int fd, const Progress& progress, RateLimiter* limiter,
                            const SparseCopyOptions& options) {
    const std::uint64_t hole = options.hole_block;
    if (hole == 0 || (hole & (hole - 1)) != 0 || kBlock % hole != 0)
        throw Error(ErrorKind::Internal, "copy_disk_sparse: bad hole block");
    const std::uint64_t size = image.size();
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) host_failure("cannot size the new disk");
    // Elsewhere the disk reads as zero already, as the new sparse file does.
    ByteSet stored = image.stored();
    stored &= ByteSet(ByteSet::interval_type::right_open(0, size));
    if (options.only != nullptr) stored &= *options.only;
    // The bytes read and not yet written: disk bytes [pending_at, pending_at + pending).
    // Pieces that follow each other on the disk go out in one write, however scattered their
    // sources: a packed volume's small files, each a piece of its own, would otherwise cost
    // a system call apiece.
    std::vector<std::byte> buffer(kBlock);
    std::uint64_t pending_at = 0;
    std::uint64_t pending = 0;
    SparseCopy out;
    // Writes `length` bytes from `data` at disk offset `at`.
    const auto put = [&](const std::byte* data, std::uint64_t length, std::uint64_t at) {
        if (length == 0) return;
        // Counted whole either way, so that the count does not depend on which came first.
        if (options.frontier != nullptr)
            options.frontier->write(fd, std::span(data, length), at);
        else
            write_all(fd, data, length, at);
        out.bytes_written += length;
        out.blocks += ByteSet::interval_type::right_open(
            at / hole * hole, std::min(size, (at + length + hole - 1) / hole * hole));
    };
    const auto flush = [&] {
        if (pending != 0) put(buffer.data(), pending, pending_at);
        pending = 0;
    };
    // The relocated pieces' sources, read through a window: the moves of a plan for a
    // million small files take one read a file otherwise, and in the order of their
    // destinations half of those sources lie within 64 KiB of the one before.
    const std::span<const Relocation> relocated = options.relocated;
    ReadWindow sources(image, kBlock, 64 << 10);
    // Copies the image's bytes [from, from + length) to disk offset `to`: those of the
    // relocated piece `piece` when it is one of them, read through `sources`.
    const auto copy = [&](std::uint64_t to, std::uint64_t from, std::uint64_t length,
                          std::optional<std::size_t> piece) {
        for (std::uint64_t at = to; at < to + length;) {
            progress.update(at, size);
            if (pending == kBlock || (pending != 0 && pending_at + pending != at)) flush();
            if (pending == 0) pending_at = at;
            // A read ends on a hole block's boundary unless the piece ends first, so that each
            // block of the piece is tested whole.
            std::uint64_t n = std::min(kBlock - pending, to + length - at);
            // When the buffer's room ends before the next boundary, what is pending goes first.
            if (const std::uint64_t past = (at + n) % hole; at + n < to + length) n = past < n ? n - past : 0;
            if (n == 0) {
                flush();
                continue;
            }
            if (limiter != nullptr) {
                limiter->acquire(n, progress.stop);
                progress.update(at, size);  // a stop ends the wait: cancel now
            }
            std::byte* const read = buffer.data() + pending;
            const std::span<std::byte> into(read, n);
            if (!piece)
                image.read(from + (at - to), into);
            else
                sources.read_into(from + (at - to), into, [&](std::size_t j) -> std::optional<DiskRange> {
                    if (*piece + 1 + j >= relocated.size()) return std::nullopt;
                    const Relocation& r = relocated[*piece + 1 + j];
                    return DiskRange{r.from, r.from + r.length};
                });
            // A zero block (or the piece's part of one) is not written: what precedes it
            // goes out, and what follows the last one stays pending.
            std::uint64_t kept = 0;  // [kept, n) of this read may still be written
            for (std::uint64_t off = 0; off < n;) {
                const std::uint64_t len = std::min(hole - (at + off) % hole, n - off);
                if (all_zero(std::span<const std::byte>(read + off, len))) {
                    if (kept == 0)
                        put(buffer.data(), pending + off, pending_at);
                    else if (off > kept)
                        put(read + kept, off - kept, at + kept);
                    pending = 0;
                    kept = off + len;
                }
                off += len;
            }
            if (kept != 0) {
                std::memmove(buffer.data(), read + kept, n - kept);
                pending_at = at + kept;
            }
            pending += n - kept;
            at += n;
        }
    };
    std::size_t moved = 0;
    const auto copy_piece = [&] {
        const Relocation& r = relocated[moved];
        copy(r.to, r.from, r.length, moved++);
    };
    for (const auto& range : stored) {
        while (moved < relocated.size() && relocated[moved].to < range.lower()) copy_piece();
        copy(range.lower(), range.lower(), boost::icl::length(range), std::nullopt);
    }
    while (moved < relocated.size()) copy_piece();
    flush();
    if (options.frontier != nullptr) options.frontier->finish(size);
    progress.update(size, size);
    return out;
}

CopyFrontier::CopyFrontier(int fd, std::uint64_t size) {
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) host_failure("cannot size the new disk");
}

void CopyFrontier::write(int fd, std::span<const std::byte> data, std::uint64_t at) {
    const auto range = ByteSet::interval_type::right_open(at, at + data.size());
    {
        // The test and the write under one lock: a take between them would be overwritten.
        const std::lock_guard lock(mutex_);
        for (const auto& part : untaken(range))
            write_all(fd, data.data() + (part.lower() - at), boost::icl::length(part), part.lower());
    }
    reached_.store(at + data.size(), std::memory_order_release);
}

ByteSet CopyFrontier::untaken(const ByteSet::interval_type& range) const {
    ByteSet out(range);
    const auto [first, last] = taken_.equal_range(range);
    for (auto it = first; it != last; ++it) out -= *it;
    return out;
}

void CopyFrontier::write_move(WritableRawFile& file, std::span<const std::byte> data, std::uint64_t at,
                              bool take) {
    const std::lock_guard lock(mutex_);
    if (take) taken_ += ByteSet::interval_type::right_open(at, at + data.size());
    file.write(at, data);
}

DeferredCopyDisk::DeferredCopyDisk(WritableRawFile& file, const DiskImage& image, ByteSet deferred,
                                   std::span<const Relocation> relocated, CopyBeside beside)
    : file_(file), image_(image), deferred_(std::move(deferred)), relocated_(relocated), beside_(beside) {}

bool DeferredCopyDisk::copy_will_write(std::uint64_t from, std::uint64_t end) const {
    if (from >= end) return false;
    const auto range = ByteSet::interval_type::right_open(from, end);
    if (beside_.copied != nullptr && boost::icl::intersects(*beside_.copied, range)) return true;
    const auto piece = std::ranges::upper_bound(relocated_, from, {}, &Relocation::to);
    if (piece != relocated_.begin() && std::prev(piece)->to + std::prev(piece)->length > from) return true;
    return piece != relocated_.end() && piece->to < end;
}

void DeferredCopyDisk::read_copied(std::uint64_t offset, std::span<std::byte> out) const {
    if (beside_.frontier == nullptr) return file_.read(offset, out);
    // Taken before the file is read: below it, the copy had written what the file holds.
    const std::uint64_t reached = beside_.frontier->reached();
    file_.read(offset, out);
    const std::uint64_t end = offset + out.size();
    const std::uint64_t from = std::max(offset, reached);
    if (from >= end) return;
    // Where the copy has not come by, what it will write there: the image's bytes, but
    // what the moves wrote since (and took from it). What the file held there is replaced.
    const auto window = ByteSet::interval_type::right_open(from, end);
    const auto put = [&](const ByteSet::interval_type& part, std::uint64_t source) {
        for (const auto& b : beside_.frontier->untaken(part))
            image_.read(source + (b.lower() - part.lower()),
                        out.subspan(b.lower() - offset, boost::icl::length(b)));
    };
    if (beside_.copied != nullptr) {
        const auto [first, last] = beside_.copied->equal_range(window);
        for (auto it = first; it != last; ++it) {
            const auto part = *it & window;
            put(part, part.lower());
        }
    }
    auto piece = std::ranges::upper_bound(relocated_, from, {}, &Relocation::to);
    if (piece != relocated_.begin()) --piece;
    for (; piece != relocated_.end() && piece->to < end; ++piece) {
        const auto part = ByteSet::interval_type::right_open(piece->to, piece->to + piece->length) & window;
        if (!boost::icl::is_empty(part)) put(part, piece->from + (part.lower() - piece->to));
    }
}

void DeferredCopyDisk::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (out.empty()) return;
    const std::uint64_t end = offset + out.size();
    std::uint64_t at = offset;
    const auto [first, last] = deferred_.equal_range(ByteSet::interval_type::right_open(offset, end));
    for (auto it = first; it != last; ++it) {
        const std::uint64_t lo = std::max(at, it->lower());
        const std::uint64_t hi = std::min(end, it->upper());
        if (lo > at) read_copied(at, out.subspan(at - offset, lo - at));
        image_.read(lo, out.subspan(lo - offset, hi - lo));
        at = hi;
    }
    if (end > at) read_copied(at, out.subspan(at - offset, end - at));
}

void DeferredCopyDisk::write(std::uint64_t offset, std::span<const std::byte> bytes) {
    if (beside_.frontier != nullptr)
        beside_.frontier->write_move(
            file_, bytes, offset,
            copy_will_write(std::max(offset, beside_.frontier->reached()), offset + bytes.size()));
    else
        file_.write(offset, bytes);
    const auto written = ByteSet::interval_type::right_open(offset, offset + bytes.size());
    deferred_ -= written;
    changed_ += written;
}

bool DeferredCopyDisk::copied_ahead(std::uint64_t to, std::uint64_t from, std::uint64_t length) {
    if (length == 0) return true;
    const auto piece = std::ranges::upper_bound(relocated_, to, {}, &Relocation::to);
    if (piece == relocated_.begin()) return false;
    const Relocation& r = *std::prev(piece);
    const auto target = ByteSet::interval_type::right_open(to, to + length);
    if (to + length > r.to + r.length || from != r.from + (to - r.to) ||
        boost::icl::intersects(changed_, target) ||
        boost::icl::intersects(changed_, ByteSet::interval_type::right_open(from, from + length)))
        return false;
    deferred_ -= target;
    changed_ += target;
    return true;
}

std::uint64_t DeferredCopyDisk::copy(const ByteSet& bytes, RateLimiter* limiter,
                                     const std::stop_token& stop) {
    std::uint64_t copied = 0;
    std::vector<std::byte> block;
    for (const auto& range : deferred_ & bytes)
        for (std::uint64_t at = range.lower(); at < range.upper();) {
            const std::uint64_t n = std::min(kBlock, range.upper() - at);
            if (limiter != nullptr) {
                limiter->acquire(n, stop);
                if (stop.stop_requested())
                    throw Error(ErrorKind::Cancelled, "cancelled");  // it ended the wait
            }
            block.resize(n);
            image_.read(at, block);
            write(at, block);
            at += n;
            copied += n;
        }
    return copied;
}

}  // namespace guestfrag
