// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/mover.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/writable_disk.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_device.hpp"
#include "core/ntfs/ntfs_volume.hpp"
#include "core/plan/apply.hpp"

extern "C" {
#include <ntfs-3g/bitmap.h>
}

namespace guestfrag {
namespace {

constexpr std::int64_t kCopyBlock = 1 << 20;

using ntfs::AttrPtr;
using ntfs::InodePtr;

/// A reason to skip the move, thrown inside one move and caught around it.
struct Skip {
    std::string reason;
};

/// Finds the streams moves name in the map of the input, which is sorted by record. Plans
/// in MFT order ask for records in ascending order, so the search gallops on from where the
/// last one ended: a few neighbouring Streams, where a binary search over a million of them
/// missed the cache at most of its 20 steps (4.5 % of apply's user time on the 1M-file
/// volume).
class StreamFinder {
public:
    explicit StreamFinder(const VolumeMap& map) : streams_(map.streams) {}

    [[nodiscard]] const Stream* find(const Move& move) {
        const std::uint64_t record = move.mft_record;
        std::size_t lo = 0;
        std::size_t end = streams_.size();
        if (last_ < streams_.size() && streams_[last_].mft_record <= record) {
            lo = last_;
            std::size_t step = 1;
            for (; lo + step < streams_.size() && streams_[lo + step].mft_record < record; step *= 2)
                lo += step;
            end = std::min(lo + step + 1, streams_.size());
        }
        auto it = std::lower_bound(streams_.begin() + static_cast<std::ptrdiff_t>(lo),
                                   streams_.begin() + static_cast<std::ptrdiff_t>(end), record,
                                   [](const Stream& s, std::uint64_t r) { return s.mft_record < r; });
        last_ = static_cast<std::size_t>(it - streams_.begin());
        for (; it != streams_.end() && it->mft_record == record; ++it)
            if (it->has_label(move.stream)) return &*it;
        return nullptr;
    }

private:
    const std::vector<Stream>& streams_;
    std::size_t last_ = 0;  ///< where the last search ended: the first stream of its record
};

/// The $Bitmap bits of clusters [first, last) of `vol`, read at once.
class BitmapSpan {
public:
    /// Throws Error(Io) when $Bitmap cannot be read.
    BitmapSpan(ntfs_volume* vol, std::int64_t first, std::int64_t last)
        : first_byte_(first / 8), bits_(static_cast<std::size_t>((last - 1) / 8 - first_byte_ + 1)) {
        errno = 0;
        if (ntfs_attr_pread(vol->lcnbmp_na, first_byte_, static_cast<s64>(bits_.size()), bits_.data()) !=
            static_cast<s64>(bits_.size()))
            ntfs::throw_library_error(ErrorKind::Io, "cannot read $Bitmap");
    }

    [[nodiscard]] bool used(std::int64_t cluster) const {
        return (bits_[static_cast<std::size_t>(cluster / 8 - first_byte_)] >> (cluster % 8) & 1u) != 0;
    }

private:
    std::int64_t first_byte_;
    std::vector<std::uint8_t> bits_;
};

/// Whether every cluster of [lcn, lcn + count) is clear in $Bitmap.
bool clusters_free(ntfs_volume* vol, std::int64_t lcn, std::int64_t count) {
    if (lcn < 0 || count <= 0 || lcn + count > vol->nr_clusters) return false;
    const BitmapSpan bitmap(vol, lcn, lcn + count);
    for (std::int64_t c = lcn; c < lcn + count; ++c)
        if (bitmap.used(c)) return false;
    return true;
}

/// Whether VCNs [vcn, vcn + count) of `rl` map to the LCN-contiguous run at `lcn`.
bool maps_to(const runlist_element* rl, std::int64_t vcn, std::int64_t lcn, std::int64_t count) {
    for (std::int64_t v = vcn; v < vcn + count;) {
        const runlist_element* e = rl;
        while (e->length != 0 && !(e->vcn <= v && v < e->vcn + e->length)) ++e;
        if (e->length == 0 || e->lcn < 0 || e->lcn + (v - e->vcn) != lcn + (v - vcn)) return false;
        v = e->vcn + e->length;
    }
    return true;
}

/// `rl` with VCNs [vcn, vcn + count) pointed at `to`, runs split where the range cuts them
/// and LCN-contiguous neighbours merged. Allocated with malloc: libntfs-3g frees it.
runlist_element* repointed(const runlist_element* rl, std::int64_t vcn, std::int64_t to, std::int64_t count) {
    std::vector<runlist_element> out;
    auto push = [&out](std::int64_t v, std::int64_t l, std::int64_t n) {
        if (n <= 0) return;
        if (!out.empty()) {
            runlist_element& prev = out.back();
            const bool both_holes = prev.lcn == LCN_HOLE && l == LCN_HOLE;
            const bool contiguous = prev.lcn >= 0 && l >= 0 && prev.lcn + prev.length == l;
            if (both_holes || contiguous) {
                prev.length += n;
                return;
            }
        }
        out.push_back(runlist_element{v, l, n});
    };
    const runlist_element* e = rl;
    for (; e->length != 0; ++e) {
        const std::int64_t start = e->vcn;
        const std::int64_t end = e->vcn + e->length;
        const std::int64_t cut_from = std::clamp(vcn, start, end);
        const std::int64_t cut_to = std::clamp(vcn + count, start, end);
        const auto lcn_at = [e](std::int64_t v) { return e->lcn < 0 ? e->lcn : e->lcn + (v - e->vcn); };
        push(start, lcn_at(start), cut_from - start);
        push(cut_from, to + (cut_from - vcn), cut_to - cut_from);
        push(cut_to, lcn_at(cut_to), end - cut_to);
    }
    out.push_back(runlist_element{e->vcn, e->lcn, 0});  // the terminator as it was
    auto* copy = static_cast<runlist_element*>(std::malloc(out.size() * sizeof(runlist_element)));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, out.data(), out.size() * sizeof(runlist_element));
    return copy;
}

/// Where a move's copy takes its bytes from the rate limit, and its running total.
struct Copying {
    RateLimiter* limiter = nullptr;
    std::stop_token stop;
    std::uint64_t bytes = 0;
};

void copy_clusters(ntfs_volume* vol, std::int64_t from, std::int64_t to, std::int64_t count, Copying& copying) {
    const std::int64_t cs = vol->cluster_size;
    // Compaction's copy wrote most destinations ahead, from sources nothing has touched
    // since: the disk knows, and neither is read (the output's proofs read both later).
    if (ntfs::copied_ahead(vol->dev, static_cast<std::uint64_t>(to * cs),
                           static_cast<std::uint64_t>(from * cs), static_cast<std::uint64_t>(count * cs))) {
        copying.bytes += static_cast<std::uint64_t>(count * cs);
        return;
    }
    std::vector<char> data(static_cast<std::size_t>(std::min(count * cs, kCopyBlock)));
    std::vector<char> back(data.size());
    const auto read = [&](std::int64_t lcn, std::int64_t at, std::int64_t n, std::vector<char>& into,
                          const char* what) {
        if (ntfs_pread(vol->dev, lcn * cs + at, n, into.data()) != n)
            ntfs::throw_library_error(ErrorKind::Io,
                                      std::string(what) + " clusters at LCN " + std::to_string(lcn));
    };
    for (std::int64_t done = 0; done < count * cs;) {
        const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(data.size()), count * cs - done);
        const auto same = [&] {
            return std::memcmp(data.data(), back.data(), static_cast<std::size_t>(n)) == 0;
        };
        if (copying.limiter != nullptr) copying.limiter->acquire(static_cast<std::uint64_t>(n), copying.stop);
        errno = 0;
        read(from, done, n, data, "cannot read");
        // A destination that holds the bytes already is not written again.
        read(to, done, n, back, "cannot read");
        if (!same()) {
            if (ntfs_pwrite(vol->dev, to * cs + done, n, data.data()) != n)
                ntfs::throw_library_error(ErrorKind::Io,
                                          "cannot write clusters at LCN " + std::to_string(to));
            read(to, done, n, back, "cannot read back");
            if (!same())
                throw Error(ErrorKind::Io,
                            "clusters written at LCN " + std::to_string(to) + " do not read back the same");
        }
        done += n;
        copying.bytes += static_cast<std::uint64_t>(n);
    }
}

/// The stream of a run of consecutive moves, open for them: its runlist is edited in memory
/// move by move and written once, when the run ends (close), so that the record layout
/// libntfs-3g chooses follows the final runlist, not every intermediate one.
class OpenStream {
public:
    /// Opens the stream `move` names, or throws Skip for one no move may touch.
    OpenStream(ntfs_volume* vol, StreamFinder& before, const Move& move)
        : vol_(vol), record_(move.mft_record) {
        stream_ = before.find(move);
        if (stream_ == nullptr) throw Skip{"no such non-resident stream"};
        if (stream_->placement != Placement::Movable)
            throw Skip{"system file left in place: " + std::string(stream_->reason)};
        ni_.reset(ntfs_inode_open(vol, static_cast<MFT_REF>(record_)));
        if (!ni_)
            ntfs::throw_library_error(ErrorKind::Corrupt, "cannot open record " + std::to_string(record_));
        ntfschar* raw_name = nullptr;
        int name_length = 0;
        if (!stream_->name.empty()) {
            name_length = ntfs_mbstoucs(std::string(stream_->name).c_str(), &raw_name);
            if (name_length < 0) throw Skip{"the stream's name cannot be converted"};
        }
        const std::unique_ptr<ntfschar, ntfs::MallocFreer> name(raw_name);
        na_.reset(ntfs_attr_open(ni_.get(), static_cast<ATTR_TYPES>(cpu_to_le32(stream_->type)),
                                 name ? name.get() : AT_UNNAMED, static_cast<u32>(name_length)));
        // An attribute list that an earlier rewrite of its file's runlists removed: there is
        // nothing left to move (the verification expects exactly that).
        const bool list = stream_->type == static_cast<std::uint32_t>(AttrType::AttributeList);
        if (list && (!na_ ? errno == ENOENT : !NAttrNonResident(na_.get()))) {
            gone_ = true;
            return;
        }
        if (!na_) throw Skip{"the stream cannot be opened: " + ntfs::library_reason(errno)};
        if (!NAttrNonResident(na_.get())) throw Skip{"resident stream"};
        if (na_->data_flags & ATTR_IS_ENCRYPTED) throw Skip{"encrypted stream"};
        errno = 0;
        if (ntfs_attr_map_whole_runlist(na_.get()) != 0)
            ntfs::throw_library_error(ErrorKind::Corrupt,
                                      "cannot read the runlist of record " + std::to_string(record_));
    }

    [[nodiscard]] const Stream& stream() const { return *stream_; }

    /// Carries `move` out: checks, destination bits set, clusters copied and read back, the
    /// runlist repointed in memory, source bits cleared. Throws Skip before writing anything.
    void move(Move move, Copying& copying) {
        if (gone_) return;
        if (stream_->type == static_cast<std::uint32_t>(AttrType::AttributeList)) {
            // libntfs-3g truncates an attribute list as it removes entries: what was cut off
            // is free already, and only the rest moves.
            const runlist_element* end = na_->rl;
            while (end->length != 0) ++end;
            move.clusters = std::min(move.clusters, end->vcn - move.vcn);
            if (move.clusters <= 0) return;
        }
        if (!maps_to(na_->rl, move.vcn, move.from_lcn, move.clusters))
            throw Skip{"the source run is not where the plan says (an earlier move was skipped)"};
        if (!clusters_free(vol_, move.to_lcn, move.clusters))
            throw Skip{"the destination is not free (an earlier move was skipped)"};
        std::unique_ptr<runlist_element, ntfs::MallocFreer> rl(
            repointed(na_->rl, move.vcn, move.to_lcn, move.clusters));
        // Nothing is written before here; from here on a failure leaves the disk unusable and
        // is an error, not a skip.
        if (ntfs_bitmap_set_run(vol_->lcnbmp_na, move.to_lcn, move.clusters) != 0)
            ntfs::throw_library_error(ErrorKind::Io, "cannot allocate the destination in $Bitmap");
        copy_clusters(vol_, move.from_lcn, move.to_lcn, move.clusters, copying);
        std::free(na_->rl);
        na_->rl = rl.release();
        if (ntfs_bitmap_clear_run(vol_->lcnbmp_na, move.from_lcn, move.clusters) != 0)
            ntfs::throw_library_error(ErrorKind::Io, "cannot free the source in $Bitmap");
        changed_ = true;
    }

    /// Writes the runlist when a move changed it. libntfs-3g lays the mapping pairs out over
    /// the attribute's records as it does when a file grows: it fills the records the
    /// attribute has, in attribute-list order, adds an extension record (and an attribute
    /// list) when they are full, and removes the records (and list entries) a shorter runlist
    /// no longer needs.
    void close() {
        if (changed_) {
            errno = 0;
            if (ntfs_attr_update_mapping_pairs(na_.get(), 0) != 0)
                ntfs::throw_library_error(ErrorKind::Io,
                                          "cannot write the runlist of record " + std::to_string(record_));
            // Moving changes no size: libntfs-3g's request to rewrite the file's names (with
            // their copies of sizes and times) in the parent directory's index is dropped,
            // so the index blocks stay as they were.
            NInoFileNameClearDirty(ni_.get());
        }
        if (na_) ntfs_attr_close(na_.release());
        if (ntfs_inode_close(ni_.release()) != 0)
            ntfs::throw_library_error(ErrorKind::Io, "cannot write record " + std::to_string(record_));
    }

private:
    ntfs_volume* vol_;
    std::uint64_t record_;
    const Stream* stream_ = nullptr;
    InodePtr ni_;
    AttrPtr na_;
    bool gone_ = false;  ///< an attribute list no longer there
    bool changed_ = false;
};

/// The end of the run of consecutive moves of one stream that starts at `first`.
std::size_t run_end(const std::vector<Move>& moves, std::size_t first) {
    std::size_t end = first + 1;
    while (end < moves.size() && moves[end].mft_record == moves[first].mft_record &&
           moves[end].stream == moves[first].stream)
        ++end;
    return end;
}

}  // namespace

MoveOutcome carry_out_moves(WritableDisk& disk, const VolumeWindow& window, const VolumeMap& before,
                            const Plan& plan, const Progress& progress,
                            const std::function<void(std::size_t)>& after_move, RateLimiter* limiter,
                            const std::function<void(std::size_t, const std::stop_token&)>& before_move) {
    ntfs::Volume volume(ntfs::Device(disk, window.offset, window.length), ntfs::MountMode::Forensic);
    MoveOutcome outcome;
    Copying copying{limiter, progress.stop};
    StreamFinder streams(before);
    const auto skip_all = [&outcome](std::size_t from, std::size_t to, const std::string& reason) {
        for (std::size_t i = from; i < to; ++i) outcome.skipped.push_back({i, reason});
    };
    for (std::size_t first = 0; first < plan.moves.size();) {
        const std::size_t end = run_end(plan.moves, first);
        std::optional<OpenStream> open;
        try {
            open.emplace(volume.get(), streams, plan.moves[first]);
        } catch (const Skip& skip) {
            skip_all(first, end, skip.reason);
            first = end;
            continue;
        }
        if (unit_left_in_part(open->stream(), std::span(plan.moves).subspan(first, end - first))) {
            const std::string unit = std::to_string(open->stream().unit_clusters());
            skip_all(first, end,
                     "compressed or sparse stream moved in pieces that leave part of its compression unit of " +
                         unit + " clusters behind");
            first = end;
            continue;
        }
        for (std::size_t i = first; i < end; ++i) {
            progress.update(i, plan.moves.size());
            if (before_move) before_move(i, progress.stop);
            try {
                open->move(plan.moves[i], copying);
            } catch (const Skip& skip) {
                outcome.skipped.push_back({i, skip.reason});
                continue;
            }
            outcome.done.push_back(i);
            if (after_move) after_move(i);
        }
        open->close();
        first = end;
    }
    progress.update(plan.moves.size(), plan.moves.size());
    volume.unmount();
    outcome.bytes_copied = copying.bytes;
    return outcome;
}

ByteSet bytes_in_use(WritableDisk& disk, const VolumeWindow& window, const ByteSet& within) {
    ntfs::Volume volume(ntfs::Device(disk, window.offset, window.length), ntfs::MountMode::Forensic);
    ntfs_volume* vol = volume.get();
    const auto cs = static_cast<std::uint64_t>(vol->cluster_size);
    const std::uint64_t end = window.offset + static_cast<std::uint64_t>(vol->nr_clusters) * cs;
    ByteSet used;
    for (const auto& range : within & ByteSet(ByteSet::interval_type::right_open(window.offset, end))) {
        const std::uint64_t first = (range.lower() - window.offset) / cs;
        const std::uint64_t last = (range.upper() - window.offset + cs - 1) / cs;  // past the end
        const BitmapSpan bitmap(vol, static_cast<std::int64_t>(first), static_cast<std::int64_t>(last));
        for (std::uint64_t c = first; c < last; ++c)
            if (bitmap.used(static_cast<std::int64_t>(c)))
                used +=
                    ByteSet::interval_type::right_open(std::max(range.lower(), window.offset + c * cs),
                                                       std::min(range.upper(), window.offset + (c + 1) * cs));
    }
    volume.unmount();
    return used;
}

}  // namespace guestfrag
