// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/guest_model.hpp"

#include <algorithm>
#include <array>
#include <boost/icl/interval_set.hpp>
#include <set>

#include "core/error.hpp"
#include "core/estimate/stream_ios.hpp"

namespace guestfrag {

namespace {

constexpr std::uint64_t KiB = 1024;

constexpr std::uint64_t kTarBlock = 512;

// docs/estimate.md §1.1 says where each value comes from. cat asks for 128 KiB (coreutils'
// io_blksize) and advises sequential access; GNU tar fills 10 KiB records (20 blocks).
constexpr std::array kReaders{
    FileReader{"cat", 128 * KiB, true, false},
    FileReader{"tar", 20 * kTarBlock, false, true},
};

constexpr std::array kProfiles{
    GuestProfile{"windows", GuestProfile::Cache::File, GuestProfile::RecordReads::MftCache, 4 * KiB,
                 128 * KiB, 0, false, FileReader{"", 64 * KiB, false, false}},
    GuestProfile{"linux-ntfs3g", GuestProfile::Cache::Disk, GuestProfile::RecordReads::DataCache, 4 * KiB,
                 128 * KiB, 0, false, kReaders[0], 128 * KiB, 128 * KiB},
    GuestProfile{"linux-ntfs3", GuestProfile::Cache::File, GuestProfile::RecordReads::Blocks, 4 * KiB,
                 128 * KiB, 0, true, kReaders[0]},
    GuestProfile{"raw", GuestProfile::Cache::None, GuestProfile::RecordReads::None, 512, 0, 0, false,
                 FileReader{"", 0, false, false}},
};

/// Linux's on-demand read-ahead (mm/readahead.c, 6.1), over one cache's pages: a window
/// starts at the first read, grows fourfold and then twofold up to the largest window
/// while the reader keeps reaching the marked page of the last window, and a read that
/// follows nothing cached reads only what was asked. Pages are cache indexes; `fetch` turns
/// a run of missing pages into IOs.
class ReadAheadCache {
public:
    using Fetch = std::function<void(std::uint64_t first, std::uint64_t count)>;

    ReadAheadCache(std::uint64_t limit, std::uint64_t max_pages, Fetch fetch)
        : limit_(limit), max_(max_pages), fetch_(std::move(fetch)) {}

    /// A read of pages [index, index + count) that ends in (or, aligned, before) page
    /// `after`: what the kernel's filemap_read does. `after` is the page of the byte after
    /// the read, which the next read is compared with (file_ra_state::prev_pos).
    void read(std::uint64_t index, std::uint64_t count, std::uint64_t after) {
        const std::uint64_t end = std::min(limit_, index + count);
        for (std::uint64_t pos = index; pos < end;) {
            if (!cached(pos)) {
                sync_ahead(pos, end - pos);
                if (!cached(pos)) load(pos, 1);
            }
            if (markers_.erase(pos) != 0) ondemand(pos, end - pos, true);
            // Up to the next page that is missing or marked: nothing happens in between.
            std::uint64_t next = end;
            const auto run = cached_.find(pos);
            if (run != cached_.end()) next = std::min(next, boost::icl::upper(*run));
            if (const auto m = markers_.upper_bound(pos); m != markers_.end()) next = std::min(next, *m);
            pos = std::max(pos + 1, next);
        }
        prev_ = after;
    }

    /// A read of pages [index, index + count) that never reads ahead (a buffer-head read).
    void read_alone(std::uint64_t index, std::uint64_t count) {
        load(index, std::min(limit_, index + count) - std::min(limit_, index));
    }

private:
    [[nodiscard]] bool cached(std::uint64_t page) const { return cached_.find(page) != cached_.end(); }

    static std::uint64_t round_up_pow2(std::uint64_t v) {
        std::uint64_t p = 1;
        while (p < v) p <<= 1;
        return p;
    }
    [[nodiscard]] std::uint64_t init_size(std::uint64_t request) const {
        const std::uint64_t size = round_up_pow2(request);
        if (size <= max_ / 32) return size * 4;
        if (size <= max_ / 4) return size * 2;
        return max_;
    }
    [[nodiscard]] std::uint64_t next_size(std::uint64_t current) const {
        if (current < max_ / 16) return current * 4;
        if (current <= max_ / 2) return current * 2;
        return max_;
    }

    void sync_ahead(std::uint64_t index, std::uint64_t request) {
        if (max_ == 0) {  // read-ahead off: the kernel reads the one page asked for
            load(index, 1);
            return;
        }
        ondemand(index, request, false);
    }

    void ondemand(std::uint64_t index, std::uint64_t request, bool marker) {
        if (index == 0) return initial(index, request);
        // The expected next index: the reader reached the last window's marker or end.
        if (index == start_ + size_ - async_ || index == start_ + size_) {
            start_ += size_;
            size_ = next_size(size_);
            async_ = size_;
            return readit(index);
        }
        if (marker) {  // a marked page read-ahead state no longer describes
            std::uint64_t start = index + 1;
            while (start < limit_ && start - index <= max_ && cached(start)) start = upper_of(start);
            if (start - index > max_) return;
            start_ = start;
            size_ = next_size(start - index + request);
            async_ = size_;
            return readit(index);
        }
        if (request > max_) return initial(index, request);
        // A sequential miss: the page the last read ended before (or, unaligned, in), or the
        // one after it.
        if (prev_ && index >= *prev_ && index - *prev_ <= 1) return initial(index, request);
        if (context(index, request)) return readit(index);
        load(index, request);  // a lone random read: just what was asked, no state kept
    }

    /// try_context_readahead: the pages just before `index` are cached, as a sequential
    /// reader would have left them: read ahead as far as that history is long.
    bool context(std::uint64_t index, std::uint64_t request) {
        if (index == 0) return false;
        const auto run = cached_.find(index - 1);
        if (run == cached_.end()) return false;
        std::uint64_t history = std::min(index - boost::icl::lower(*run), max_);
        if (history <= request) return false;  // no longer than the read: a random one
        if (history >= index) history *= 2;    // cached from the start: a sequential reader
        start_ = index;
        size_ = std::min(history + request, max_);
        async_ = 1;
        return true;
    }

    void initial(std::uint64_t index, std::uint64_t request) {
        start_ = index;
        size_ = init_size(request);
        async_ = size_ > request ? size_ - request : size_;
        readit(index);
    }

    void readit(std::uint64_t index) {
        // The read would reach its own marker at once: take the next window now.
        if (index == start_ && size_ == async_) {
            const std::uint64_t add = next_size(size_);
            if (size_ + add <= max_) {
                async_ = add;
                size_ += add;
            } else {
                size_ = max_;
                async_ = max_ / 2;
            }
        }
        if (start_ >= limit_) return;
        const std::uint64_t count = std::min(size_, limit_ - start_);
        load(start_, count);
        const std::uint64_t mark = start_ + size_ - async_;
        if (async_ > 0 && mark < start_ + count) markers_.insert(mark);
    }

    [[nodiscard]] std::uint64_t upper_of(std::uint64_t page) const {
        const auto run = cached_.find(page);
        return run == cached_.end() ? page + 1 : boost::icl::upper(*run);
    }

    /// Reads the missing pages of [first, first + count), each run of them one fetch.
    void load(std::uint64_t first, std::uint64_t count) {
        const std::uint64_t end = std::min(limit_, first + count);
        for (std::uint64_t pos = first; pos < end;) {
            if (cached(pos)) {
                pos = upper_of(pos);
                continue;
            }
            std::uint64_t run_end = end;
            const auto next =
                cached_.lower_bound(boost::icl::discrete_interval<std::uint64_t>::right_open(pos, end));
            if (next != cached_.end()) run_end = std::min(run_end, boost::icl::lower(*next));
            fetch_(pos, run_end - pos);
            cached_.add(boost::icl::discrete_interval<std::uint64_t>::right_open(pos, run_end));
            pos = run_end;
        }
    }

    std::uint64_t limit_;
    std::uint64_t max_;
    Fetch fetch_;
    boost::icl::interval_set<std::uint64_t> cached_;
    std::set<std::uint64_t> markers_;
    std::uint64_t start_ = 0, size_ = 0, async_ = 0;  // file_ra_state
    std::optional<std::uint64_t> prev_;               // the page after the last read
};

}  // namespace

std::span<const FileReader> file_readers() noexcept { return kReaders; }

std::span<const GuestProfile> guest_profiles() noexcept { return kProfiles; }

std::optional<GuestProfile> find_guest_profile(std::string_view name) noexcept {
    for (const GuestProfile& p : kProfiles)
        if (p.name == name) return p;
    return std::nullopt;
}

GuestProfile with_reader(GuestProfile profile, std::string_view name) {
    if (profile.reader.name.empty())
        throw Error(ErrorKind::Unsupported, "the " + std::string(profile.name) +
                                                " guest's own layer asks its cache for each file's bytes; "
                                                "only the Linux guests take a reader");
    for (const FileReader& r : kReaders)
        if (r.name == name) {
            profile.reader = r;
            return profile;
        }
    std::string known;
    for (const FileReader& r : kReaders) known += (known.empty() ? "" : ", ") + std::string(r.name);
    throw Error(ErrorKind::Unsupported, "no reader named " + std::string(name) + " (" + known + ")");
}

const GuestProfile& default_guest_profile() noexcept { return kProfiles.front(); }

GuestProfile with_read_ahead(GuestProfile profile, std::uint64_t bytes) {
    if (bytes % profile.page_bytes != 0 || bytes > 64 * KiB * KiB)
        throw Error(ErrorKind::Unsupported, "the read-ahead window must be a multiple of " +
                                                std::to_string(profile.page_bytes) +
                                                " bytes, at most 64 MiB");
    profile.read_ahead_bytes = bytes;
    return profile;
}

struct GuestReader::State {
    const VolumeMap& volume;
    GuestProfile profile;
    std::uint64_t max_request;
    std::function<void(const Io&)> each;
    std::uint64_t page;
    std::unique_ptr<ReadAheadCache> disk;  // Cache::Disk, and the record blocks of RecordReads::Blocks
    std::unique_ptr<ReadAheadCache> mft;   // RecordReads::MftCache
    const Stream* mft_stream = nullptr;
    std::uint64_t archive_phase = 0;  // FileReader::archive: the bytes of the record filled

    /// Byte offsets stay below 2^62, as in append_stream_ios: runs and sizes beyond are corrupt
    /// (NTFS volumes end far earlier) and are cut there, so no sum below overflows.
    static constexpr std::uint64_t kByteLimit = std::uint64_t{1} << 62;
    [[nodiscard]] std::int64_t max_cluster() const {
        return static_cast<std::int64_t>(kByteLimit / volume.cluster_size / 4);
    }

    /// Sends [byte, byte + length) of the disk as IOs of at most max_request bytes.
    void send(std::uint64_t byte, std::uint64_t length) const {
        while (length > 0) {
            const std::uint64_t n = std::min(length, max_request);
            each(Io{static_cast<std::int64_t>(byte / kSectorBytes), n});
            byte += n;
            length -= n;
        }
    }

    /// Hands `piece` the disk ranges that hold bytes [from, to) of `stream`, in file order,
    /// ranges that continue each other on disk joined; holes are skipped.
    template <typename Piece>
    void map(const Stream& stream, std::uint64_t from, std::uint64_t to, Piece piece) const {
        const std::uint64_t cs = volume.cluster_size;
        std::uint64_t pending = 0, pending_length = 0;
        const auto it = std::upper_bound(
            stream.extents.begin(), stream.extents.end(), from / cs,
            [](std::uint64_t v, const Extent& e) { return v < static_cast<std::uint64_t>(e.vcn); });
        for (auto e = it == stream.extents.begin() ? it : std::prev(it); e != stream.extents.end(); ++e) {
            // Runs past 2^62 bytes are corrupt (append_stream_ios skips them too); skipping
            // them keeps every sum below from overflowing.
            if (e->vcn < 0 || e->clusters <= 0 || e->vcn > max_cluster() || e->lcn > max_cluster() ||
                e->clusters > max_cluster())
                continue;
            const std::uint64_t a = std::max(from, static_cast<std::uint64_t>(e->vcn) * cs);
            const std::uint64_t b = std::min(to, static_cast<std::uint64_t>(e->vcn + e->clusters) * cs);
            if (a >= to) break;
            if (a >= b || e->lcn < 0) continue;  // before the range, or a hole
            const std::uint64_t at = volume.partition_offset + static_cast<std::uint64_t>(e->lcn) * cs +
                                     (a - static_cast<std::uint64_t>(e->vcn) * cs);
            if (pending_length > 0 && pending + pending_length == at) {
                pending_length += b - a;
                continue;
            }
            if (pending_length > 0) piece(pending, pending_length);
            pending = at;
            pending_length = b - a;
        }
        if (pending_length > 0) piece(pending, pending_length);
    }

    /// The first byte at or after `byte` that an allocated run of `stream` holds, below its
    /// size; nullopt when none is left. Readers jump over holes with it: a sparse file's
    /// size may be many terabytes that read nothing.
    std::optional<std::uint64_t> next_allocated(const Stream& stream, std::uint64_t byte) const {
        const std::uint64_t cs = volume.cluster_size;
        // Runs are in VCN order: the first that may hold `byte` is the last starting at or
        // before its cluster.
        auto e = std::upper_bound(stream.extents.begin(), stream.extents.end(), byte / cs,
                                  [](std::uint64_t v, const Extent& x) {
                                      return x.vcn >= 0 && v < static_cast<std::uint64_t>(x.vcn);
                                  });
        if (e != stream.extents.begin()) --e;
        for (; e != stream.extents.end(); ++e) {
            if (e->lcn < 0 || e->vcn < 0 || e->clusters <= 0 || e->vcn > max_cluster() ||
                e->clusters > max_cluster())
                continue;
            const std::uint64_t end =
                (static_cast<std::uint64_t>(e->vcn) + static_cast<std::uint64_t>(e->clusters)) * cs;
            if (end <= byte) continue;
            const std::uint64_t at = std::max(byte, static_cast<std::uint64_t>(e->vcn) * cs);
            if (at >= stream.size) return std::nullopt;
            return at;
        }
        return std::nullopt;
    }

    /// Hands `request` the byte ranges [from, to) of `stream` a reader of the whole file asks
    /// for, up to its size: each ends where a step of `step` bytes ends, steps counted from
    /// `phase` (< step) bytes before the file's start (the part of a tar record already
    /// filled). The steps that lie wholly in a hole or past the last run are skipped.
    template <typename Request>
    void for_each_request(const Stream& stream, std::uint64_t step, std::uint64_t phase,
                          Request request) const {
        const std::uint64_t size = std::min(stream.size, kByteLimit);
        for (std::uint64_t from = 0; from < size;) {
            const std::optional<std::uint64_t> at = next_allocated(stream, from);
            if (!at) return;
            const std::uint64_t start = (*at + phase) / step * step;  // of the step holding `at`
            from = std::max(from, start >= phase ? start - phase : 0);
            const std::uint64_t end = start + step - phase;
            request(from, std::min(size, end));
            from = end;
        }
    }

    /// Reads disk bytes [byte, byte + length) through the disk's cache, whole pages.
    void read_disk(std::uint64_t byte, std::uint64_t length, bool ahead) const {
        const std::uint64_t first = byte / page;
        const std::uint64_t end = (byte + length + page - 1) / page;
        if (ahead)
            disk->read(first, end - first, (byte + length) / page);
        else
            disk->read_alone(first, end - first);
    }

    void read_record(std::uint64_t record) {
        const std::uint64_t size = volume.mft_record_size;
        if (!mft_stream || size == 0) return;
        const std::uint64_t from = record * size;
        if (from >= mft_stream->size) return;
        switch (profile.records) {
            case GuestProfile::RecordReads::None:
                return;
            case GuestProfile::RecordReads::DataCache:
            case GuestProfile::RecordReads::Blocks: {
                const bool ahead = profile.records == GuestProfile::RecordReads::DataCache;
                map(*mft_stream, from, from + size,
                    [&](std::uint64_t b, std::uint64_t n) { read_disk(b, n, ahead); });
                return;
            }
            case GuestProfile::RecordReads::MftCache:
                mft->read(from / page, (size + page - 1) / page, (from + size) / page);
                return;
        }
    }

    /// A cache over `stream`'s pages (by file offset), with a read-ahead window of
    /// `window_bytes`, that fetches from where its extents lie.
    std::unique_ptr<ReadAheadCache> file_cache(const Stream& stream, std::uint64_t window_bytes) {
        const std::uint64_t size = std::min(stream.size, kByteLimit);
        const std::uint64_t pages = (size + page - 1) / page;
        return std::make_unique<ReadAheadCache>(
            pages, window_bytes / page, [this, &stream, pages](std::uint64_t first, std::uint64_t count) {
                fetch_file_pages(stream, first * page, std::min((first + count) * page, pages * page));
            });
    }

    /// Sends the disk ranges of bytes [from, to) of `stream`, a run of its missing pages.
    void fetch_file_pages(const Stream& stream, std::uint64_t from, std::uint64_t to) const {
        if (profile.cache == GuestProfile::Cache::Disk) {
            // The file's own cache (FUSE's) asks the file system for the run in requests
            // of at most layer_request_bytes, up to the file's size; the file system
            // (ntfs-3g) reads each request's extents through the disk's cache.
            const std::uint64_t end = std::min(to, std::min(stream.size, kByteLimit));
            for (std::uint64_t at = from; at < end; at += profile.layer_request_bytes)
                map(stream, at, std::min(end, at + profile.layer_request_bytes),
                    [this](std::uint64_t b, std::uint64_t n) { read_disk(b, n, true); });
            return;
        }
        const auto sender = [this](std::uint64_t b, std::uint64_t n) { send(b, n); };
        // ntfs3 (mpage_readahead and ntfs_get_block_vbo, as traced on Linux 6.12): pages go
        // into a bio, sent whenever the next page does not continue it on the disk; at the
        // block holding the data's last byte (the size: the map keeps no valid data length)
        // get_block reads that block itself and waits for it, and only then is the bio of
        // the pages before it sent.
        const std::uint64_t block = std::min<std::uint64_t>(page, volume.cluster_size);
        const std::uint64_t size = std::min(stream.size, kByteLimit);
        const std::uint64_t tail = size / block * block;
        if (!profile.tail_block_first || size % block == 0 || tail < from || tail >= to) {
            map(stream, from, to, sender);
            return;
        }
        std::optional<std::pair<std::uint64_t, std::uint64_t>> pending;
        map(stream, from, tail, [&](std::uint64_t b, std::uint64_t n) {
            if (pending) send(pending->first, pending->second);
            pending = {b, n};
        });
        map(stream, tail, tail + block, sender);
        if (pending) send(pending->first, pending->second);
        map(stream, tail + block, to, sender);
    }
};

GuestReader::GuestReader(const VolumeMap& volume, const GuestProfile& profile, std::uint64_t max_io,
                         std::function<void(const Io&)> each) {
    check_max_io(max_io);
    if (volume.cluster_size == 0 || volume.cluster_size % kSectorBytes != 0)
        throw Error(ErrorKind::Unsupported,
                    "cluster size " + std::to_string(volume.cluster_size) + " is not a multiple of 512");
    if (profile.reader.archive &&
        (profile.reader.request_bytes == 0 || profile.reader.request_bytes % kTarBlock != 0))
        throw Error(ErrorKind::Unsupported, "an archive's records must be a positive multiple of 512 bytes");
    if (profile.layer_read_ahead_bytes != 0 && profile.layer_request_bytes == 0)
        throw Error(ErrorKind::Unsupported,
                    "a file cache in front of the disk's must send requests of some size");
    const std::uint64_t max_request = profile.max_request_bytes != 0 ? profile.max_request_bytes : max_io;
    state_ = std::unique_ptr<State>(new State{volume,
                                              profile,
                                              max_request,
                                              std::move(each),
                                              std::max<std::uint64_t>(profile.page_bytes, 512),
                                              {},
                                              {},
                                              nullptr});
    State& s = *state_;
    for (const Stream& st : volume.streams)
        if (st.mft_record == 0 && st.type == static_cast<std::uint32_t>(AttrType::Data) && st.name.empty())
            s.mft_stream = &st;
    if (profile.cache == GuestProfile::Cache::None) return;
    const std::uint64_t disk_end =
        volume.partition_offset +
        static_cast<std::uint64_t>(std::max<std::int64_t>(volume.total_clusters, 0)) * volume.cluster_size;
    s.disk = std::make_unique<ReadAheadCache>(
        (disk_end + s.page - 1) / s.page, profile.read_ahead_bytes / s.page,
        [&s](std::uint64_t first, std::uint64_t count) { s.send(first * s.page, count * s.page); });
    if (profile.records == GuestProfile::RecordReads::MftCache && s.mft_stream)
        s.mft = s.file_cache(*s.mft_stream, profile.read_ahead_bytes);
}

GuestReader::~GuestReader() = default;

void GuestReader::open(std::uint64_t record) {
    if (state_->profile.cache != GuestProfile::Cache::None) state_->read_record(record);
}

void GuestReader::read(const Stream& stream) {
    State& s = *state_;
    if (s.profile.cache == GuestProfile::Cache::None) {
        std::vector<Io> ios;
        append_stream_ios(s.volume, stream, s.max_request, ios);
        for (const Io& io : ios) s.each(io);
        return;
    }
    s.read_record(stream.mft_record);
    const FileReader& reader = s.profile.reader;
    std::uint64_t step = std::max(reader.request_bytes, s.page);
    std::uint64_t phase = 0;
    if (reader.archive) {
        // An archive's reads fill its records: the file's data starts after its header and
        // the next file's header after that data, padded to a block.
        step = reader.request_bytes;
        phase = (s.archive_phase + kTarBlock) % step;
        const std::uint64_t blocks = (std::min(stream.size, State::kByteLimit) + kTarBlock - 1) / kTarBlock;
        s.archive_phase = (phase + blocks % (step / kTarBlock) * kTarBlock) % step;
    }
    if (s.profile.cache == GuestProfile::Cache::Disk && s.profile.layer_read_ahead_bytes == 0) {
        // The file system reads each request's extents from the disk's cache, byte-exact.
        s.for_each_request(stream, step, phase, [&s, &stream](std::uint64_t from, std::uint64_t to) {
            s.map(stream, from, to, [&s](std::uint64_t b, std::uint64_t n) { s.read_disk(b, n, true); });
        });
        return;
    }
    const std::unique_ptr<ReadAheadCache> cache = s.file_cache(stream, s.profile.file_read_ahead_bytes());
    const std::uint64_t page = s.page;
    s.for_each_request(stream, step, phase, [&cache, page](std::uint64_t from, std::uint64_t to) {
        cache->read(from / page, (to + page - 1) / page - from / page, to / page);
    });
}

}  // namespace guestfrag
