// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/rehearsal.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <unordered_map>

#include "core/error.hpp"
#include "core/image/writable_disk.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_device.hpp"
#include "core/ntfs/ntfs_volume.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/intervals.hpp"

extern "C" {
#include <ntfs-3g/bitmap.h>
}

namespace guestfrag {

namespace {

constexpr auto kList = static_cast<std::uint32_t>(AttrType::AttributeList);

/// A disk in memory over a read-only image: writes are kept in 4 KiB pages and read back,
/// the rest reads from the image. While copies are off (`copy_data(false)`, for the moves
/// of user files' $DATA) a move's copy is taken as done without a byte moving: only the
/// records and $Bitmap bits a move writes matter to a rehearsal, and copying file data
/// would cost its size in memory.
class ScratchDisk final : public WritableDisk {
public:
    explicit ScratchDisk(const DiskImage& base) : base_(base) {}

    [[nodiscard]] const std::string& path() const noexcept override { return base_.path(); }

    void read(std::uint64_t offset, std::span<std::byte> out) const override {
        check_range(offset, out.size());
        for (std::size_t done = 0; done < out.size();) {
            const std::uint64_t at = offset + done;
            const std::size_t in_page = static_cast<std::size_t>(at % kPage);
            const std::size_t n = std::min(out.size() - done, static_cast<std::size_t>(kPage) - in_page);
            if (const auto page = pages_.find(at / kPage); page != pages_.end())
                std::memcpy(out.data() + done, page->second.data() + in_page, n);
            else
                base_.read(at, out.subspan(done, n));
            done += n;
        }
    }

    void write(std::uint64_t offset, std::span<const std::byte> bytes) override {
        check_range(offset, bytes.size());
        for (std::size_t done = 0; done < bytes.size();) {
            const std::uint64_t at = offset + done;
            const std::size_t in_page = static_cast<std::size_t>(at % kPage);
            const std::size_t n = std::min(bytes.size() - done, static_cast<std::size_t>(kPage) - in_page);
            auto [page, added] = pages_.try_emplace(at / kPage);
            if (added) {
                page->second.resize(kPage);
                base_.read(at - in_page, page->second);
            }
            std::memcpy(page->second.data() + in_page, bytes.data() + done, n);
            done += n;
        }
    }

    bool copied_ahead(std::uint64_t to, std::uint64_t from, std::uint64_t length) override {
        (void)to, (void)from, (void)length;
        return !copying_;
    }

    void copy_data(bool on) { copying_ = on; }

private:
    static constexpr std::uint64_t kPage = 4096;

    void check_range(std::uint64_t offset, std::uint64_t length) const {
        if (offset > base_.size() || length > base_.size() - offset)
            throw Error(ErrorKind::Corrupt,
                        "access at offset " + std::to_string(offset) + " runs past the end of the disk");
    }

    const DiskImage& base_;
    bool copying_ = true;
    std::unordered_map<std::uint64_t, std::vector<std::byte>> pages_;
};

/// The streams of `map` of each record asked, records asked in ascending order: a walk along
/// the map. A binary search a record missed the cache at each level, 0.19 s of the
/// rehearsal of the 1M-file volume's optimize plan (874,368 moves), which the moves wait for.
class RecordWalk {
public:
    explicit RecordWalk(const VolumeMap& map) : streams_(map.streams) {}

    [[nodiscard]] std::span<const Stream> streams_of(std::uint64_t record) {
        while (at_ < streams_.size() && streams_[at_].mft_record < record) ++at_;
        std::size_t end = at_;
        while (end < streams_.size() && streams_[end].mft_record == record) ++end;
        return std::span(streams_).subspan(at_, end - at_);
    }

private:
    const std::vector<Stream>& streams_;
    std::size_t at_ = 0;
};

std::uint64_t fragments_of(std::span<const Stream> streams) {
    std::uint64_t n = 0;
    for (const Stream& s : streams) n += s.fragments();
    return n;
}

ClusterSet clusters_of(std::span<const Extent> runs) {
    ClusterSet set;
    for (const Extent& e : runs)
        if (e.lcn != Extent::kSparse && e.clusters > 0)
            set.add(ClusterSet::interval_type::right_open(e.lcn, e.lcn + e.clusters));
    return set;
}

/// Sets and clears the scratch volume's $Bitmap bits so that its free clusters are `free`.
void set_free_space(WritableDisk& disk, const VolumeWindow& window, const ClusterSet& was,
                    const ClusterSet& free) {
    ntfs::Volume volume(ntfs::Device(disk, window.offset, window.length), ntfs::MountMode::Forensic);
    ntfs_attr* bitmap = volume.get()->lcnbmp_na;
    errno = 0;
    for (const auto& i : free - was)
        if (ntfs_bitmap_clear_run(bitmap, i.lower(), i.upper() - i.lower()) != 0)
            ntfs::throw_library_error(ErrorKind::Io, "cannot clear bits in the rehearsal's $Bitmap");
    for (const auto& i : was - free)
        if (ntfs_bitmap_set_run(bitmap, i.lower(), i.upper() - i.lower()) != 0)
            ntfs::throw_library_error(ErrorKind::Io, "cannot set bits in the rehearsal's $Bitmap");
    volume.unmount();
}

/// The attribute list of `record` on the volume as it is now.
RehearsedList read_list(ntfs_volume* vol, std::uint64_t record) {
    RehearsedList out;
    out.record = record;
    const ntfs::InodePtr ni(ntfs_inode_open(vol, static_cast<MFT_REF>(record)));
    if (!ni) ntfs::throw_library_error(ErrorKind::Io, "cannot open record " + std::to_string(record));
    if (!NInoAttrList(ni.get())) return out;
    const ntfs::AttrPtr na(ntfs_attr_open(ni.get(), AT_ATTRIBUTE_LIST, AT_UNNAMED, 0));
    if (!na)
        ntfs::throw_library_error(ErrorKind::Io,
                                  "cannot open the attribute list of " + std::to_string(record));
    if (!NAttrNonResident(na.get())) return out;
    errno = 0;
    if (ntfs_attr_map_whole_runlist(na.get()) != 0)
        ntfs::throw_library_error(ErrorKind::Io,
                                  "cannot read the list's runlist in record " + std::to_string(record));
    out.non_resident = true;
    out.size = static_cast<std::uint64_t>(na->data_size);
    out.allocated_size = static_cast<std::uint64_t>(na->allocated_size);
    for (const runlist_element* rl = na->rl; rl->length != 0; ++rl)
        out.runs.push_back({rl->vcn, rl->lcn < 0 ? Extent::kSparse : rl->lcn, rl->length});
    return out;
}

}  // namespace

std::vector<std::uint64_t> files_to_rehearse(const VolumeMap& before, const VolumeMap& after,
                                             const Plan& plan) {
    std::vector<std::uint64_t> out;
    RecordWalk walk_before(before);
    RecordWalk walk_after(after);
    for (const std::uint64_t record : files_moved(plan.moves)) {  // ascending
        const std::span<const Stream> was = walk_before.streams_of(record);
        const bool listed = std::ranges::any_of(was, [](const Stream& s) { return s.type == kList; });
        if (listed || fragments_of(walk_after.streams_of(record)) > fragments_of(was)) out.push_back(record);
    }
    return out;
}

Rehearsal rehearse_moves(const DiskImage& image, const VolumeWindow& window, const VolumeMap& before,
                         const Plan& plan, const std::vector<std::uint64_t>& files) {
    Rehearsal out;
    if (files.empty()) return out;
    // The system files the plan moves are carried along: the mounts read them ($UpCase, the
    // root index that finds $Secure), and where another file's move is left out its clusters
    // are not what its runlist says.
    std::vector<std::uint64_t> carried = files;
    for (const Move& m : plan.moves)
        if (m.mft_record < FILE_first_user) carried.push_back(m.mft_record);
    std::ranges::sort(carried);
    carried.erase(std::unique(carried.begin(), carried.end()), carried.end());
    const auto rehearsed = [&carried](std::uint64_t record) {
        return std::ranges::binary_search(carried, record);
    };

    Plan part;
    part.identity = plan.identity;
    part.strategy = plan.strategy;
    std::vector<std::size_t> index;  // part's move → plan's move
    // The moves' ends go into the sets sorted, a batch at a time: the 1M-file volume's
    // optimize plan's, added in plan order, each a search of an icl tree that missed the
    // cache, took 0.36 s of the rehearsal, which the moves wait for.
    ClusterSet others_from, others_to, own_to;
    PendingRanges<std::int64_t> from_pending, to_pending, own_pending;
    const auto into = [](ClusterSet& set) {
        return [&set](std::int64_t lo, std::int64_t hi) { set.add(cluster_range(lo, hi)); };
    };
    const auto keep = [&into](PendingRanges<std::int64_t>& pending, ClusterSet& set, std::int64_t lo,
                              std::int64_t clusters) { pending.add(lo, lo + clusters, into(set)); };
    for (std::size_t i = 0; i < plan.moves.size(); ++i) {
        const Move& m = plan.moves[i];
        if (!rehearsed(m.mft_record)) {
            keep(from_pending, others_from, m.from_lcn, m.clusters);
            keep(to_pending, others_to, m.to_lcn, m.clusters);
            continue;
        }
        keep(own_pending, own_to, m.to_lcn, m.clusters);
        part.moves.push_back(m);
        index.push_back(i);
    }
    from_pending.give_to(into(others_from));
    to_pending.give_to(into(others_to));
    own_pending.give_to(into(own_to));

    ScratchDisk scratch(image);
    set_free_space(scratch, window, before.free, (before.free + others_from) - (others_to - own_to));
    // A system file's $DATA is read by the mounts ($UpCase, $Secure's $SDS), a user file's
    // by nothing here.
    const auto copy_unless_user_data = [&](std::size_t i, const std::stop_token&) {
        const Move& m = part.moves[i];
        const std::string& label = m.stream;
        scratch.copy_data(m.mft_record < FILE_first_user ||
                          !(label == "$DATA" || label.starts_with("$DATA:")));
    };
    const MoveOutcome done =
        carry_out_moves(scratch, window, before, part, {}, {}, nullptr, copy_unless_user_data);
    for (const SkippedMove& s : done.skipped) out.skipped.push_back({index[s.index], s.reason});

    ntfs::Volume volume(ntfs::Device(scratch, window.offset, window.length), ntfs::MountMode::Forensic);
    for (const std::uint64_t record : files) out.lists.push_back(read_list(volume.get(), record));
    return out;
}

bool adopt_rehearsal(VolumeMap& after, const Rehearsal& rehearsal) {
    bool changed = false;
    const auto position = [&after](std::uint64_t record) {
        Stream key;
        key.mft_record = record;
        key.type = kList;
        const auto at = std::ranges::lower_bound(after.streams, map_order(key), {},
                                                 [](const Stream& s) { return map_order(s); });
        return std::pair{at, at != after.streams.end() && map_order(*at) == map_order(key)};
    };
    // Room for the lists that appear, and only those (apply_plan leaves room for a few):
    // a vector without it moves whole, 64 MB held twice at the 1M-file volume's compaction
    // peak.
    const auto appearing = std::ranges::count_if(rehearsal.lists, [&position](const RehearsedList& l) {
        return l.non_resident && !position(l.record).second;
    });
    if (appearing > 0) after.streams.reserve(after.streams.size() + static_cast<std::size_t>(appearing));
    for (const RehearsedList& list : rehearsal.lists) {
        const auto [at, present] = position(list.record);
        const ClusterSet was = present ? clusters_of(at->extents) : ClusterSet{};
        const ClusterSet now = clusters_of(list.runs);
        if (present && list.non_resident && at->extents == list.runs) continue;
        if (!present && !list.non_resident) continue;
        after.free += was - now;
        after.free -= now - was;
        changed = true;
        if (!list.non_resident) {
            after.streams.erase(at);
            continue;
        }
        Stream& s = present ? *at : *after.streams.insert(at, Stream{});
        s.mft_record = list.record;
        s.type = kList;
        s.size = list.size;
        s.allocated_size = list.allocated_size;
        s.extents = list.runs;
    }
    return changed;
}

}  // namespace guestfrag
