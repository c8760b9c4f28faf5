// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/ntfs/volume_reader.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/io/heap.hpp"
#include "core/ntfs/mft_parser.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_volume.hpp"
#include "core/ntfs/placement.hpp"

namespace guestfrag {
namespace {

std::array<std::byte, 512> read_boot_sector(const DiskImage& image, const Partition& partition) {
    std::array<std::byte, 512> sector{};
    if (partition.length < sector.size() || partition.start > image.size() - sector.size())
        throw Error(ErrorKind::Corrupt, "partition too small to hold a boot sector");
    image.read(partition.start, sector);
    return sector;
}

bool is_ntfs_boot_sector(const std::array<std::byte, 512>& sector) {
    return std::memcmp(sector.data() + 3, "NTFS    ", 8) == 0;
}

// The mount trusts the boot sector's geometry; refuse sizes the partition cannot hold
// before libntfs-3g acts on them.
void check_geometry(const std::array<std::byte, 512>& sector, const Partition& partition) {
    NTFS_BOOT_SECTOR bs;
    std::memcpy(&bs, sector.data(), sizeof bs);
    const unsigned bytes_per_sector = le16_to_cpu(bs.bpb.bytes_per_sector);
    if (bytes_per_sector < 256 || bytes_per_sector > 4096 || !std::has_single_bit(bytes_per_sector))
        throw Error(ErrorKind::Corrupt, "NTFS boot sector has an invalid sector size (" +
                                            std::to_string(bytes_per_sector) + ")");
    const auto sectors = static_cast<std::uint64_t>(sle64_to_cpu(bs.number_of_sectors));
    if (sectors == 0 || sectors > partition.length / bytes_per_sector)
        throw Error(ErrorKind::Corrupt, "NTFS boot sector claims " + std::to_string(sectors) + " sectors (" +
                                            std::to_string(sectors * bytes_per_sector) +
                                            " bytes) but the partition holds " +
                                            std::to_string(partition.length) + " bytes");
}

// Bytes an attribute's value really has on the volume: a resident value's length, or the
// clusters its runlist maps (holes excluded). Sizes in the attribute header are claims;
// this is what can be read, and so what may be allocated for.
std::uint64_t mapped_bytes(ntfs_attr* na, const ntfs_volume* vol, const char* what) {
    if (!NAttrNonResident(na)) return na->data_size < 0 ? 0 : static_cast<std::uint64_t>(na->data_size);
    errno = 0;
    if (ntfs_attr_map_whole_runlist(na) != 0)
        throw Error(ErrorKind::Corrupt, std::string("cannot map the runlist of ") + what + ": " +
                                            ntfs::library_reason(errno));
    std::uint64_t clusters = 0;
    for (const runlist_element* r = na->rl; r != nullptr && r->length != 0; ++r) {
        if (r->lcn < 0) continue;
        if (r->length < 0 || r->lcn > vol->nr_clusters - r->length)
            throw Error(ErrorKind::Corrupt, std::string(what) + " maps clusters outside the volume");
        clusters += static_cast<std::uint64_t>(r->length);
    }
    return clusters * vol->cluster_size;
}

// The first `limit` bytes of an attribute's value, fewer when it is shorter. Callers
// bound `limit` by what the volume can need (and mapped_bytes), never by the claimed size.
std::vector<std::uint8_t> read_attribute(ntfs_attr* na, std::uint64_t limit, const char* what) {
    if (na->data_size < 0) throw Error(ErrorKind::Corrupt, std::string(what) + " has a negative size");
    std::vector<std::uint8_t> data(std::min(limit, static_cast<std::uint64_t>(na->data_size)));
    const auto want = static_cast<s64>(data.size());
    errno = 0;  // a short read sets none
    if (!data.empty() && ntfs_attr_pread(na, 0, want, data.data()) != want)
        throw Error(ErrorKind::Corrupt, std::string("cannot read ") + what + ": " + ntfs::library_reason(errno));
    return data;
}

// Maximal runs of clear bits in $Bitmap below `clusters`, appended in ascending order.
ClusterSet free_extents(const std::vector<std::uint8_t>& bitmap, std::int64_t clusters) {
    ClusterSet free;
    std::int64_t run_start = -1;
    const auto limit = std::min<std::int64_t>(clusters, static_cast<std::int64_t>(bitmap.size()) * 8);
    auto close_run = [&](std::int64_t end) {
        if (run_start >= 0) free.add(free.end(), ClusterSet::interval_type::right_open(run_start, end));
        run_start = -1;
    };
    for (std::int64_t lcn = 0; lcn < limit;) {
        // Whole bytes of one value are the common case: skip them eight clusters at a time.
        const std::uint8_t byte = bitmap[static_cast<std::size_t>(lcn / 8)];
        if (lcn % 8 == 0 && lcn + 8 <= limit && (byte == 0x00 || byte == 0xFF)) {
            if (byte == 0xFF) close_run(lcn);
            else if (run_start < 0) run_start = lcn;
            lcn += 8;
            continue;
        }
        if ((byte >> (lcn % 8)) & 1) close_run(lcn);
        else if (run_start < 0) run_start = lcn;
        ++lcn;
    }
    close_run(limit);
    // Clusters past the end of $Bitmap's data do not exist as far as NTFS knows: not free.
    return free;
}

// Namespace preference for a file's display name: Win32 (or Win32+DOS) first, then
// POSIX, DOS last. Lower is better.
int name_rank(std::uint8_t name_space) {
    static constexpr std::array<int, 4> kRank{1, 0, 3, 0};  // POSIX, Win32, DOS, Win32+DOS
    return kRank[name_space & 3];
}

// What the scan keeps beside each FileEntry until names are final: the record's sequence
// number (to match extension records to it) and the rank of the name chosen so far. Only
// the best name is stored, so memory stays at one name per file however many hard links
// (or DOS short names) a file has.
struct NameChoice {
    std::uint16_t sequence = 0;
    std::uint8_t rank = 4;  // worse than any real name
};

// Takes `name` for `entry` when it ranks better than the name it has.
void offer(FileEntry& entry, NameChoice& choice, const ntfs::NameAttribute& name, NamePool& pool) {
    if (name_rank(name.name_space) >= choice.rank) return;
    choice.rank = static_cast<std::uint8_t>(name_rank(name.name_space));
    entry.parent = name.parent;
    entry.name = pool.add(name.name);
}

// The best-ranked of a record's names, or nullptr when it has none.
const ntfs::NameAttribute* best_name(const std::vector<ntfs::NameAttribute>& names) {
    const ntfs::NameAttribute* best = nullptr;
    for (const auto& n : names)
        if (best == nullptr || name_rank(n.name_space) < name_rank(best->name_space)) best = &n;
    return best;
}

struct SegmentRef {
    std::uint64_t base;
    std::uint16_t base_sequence;
    bool extension;
    ntfs::AttributeSegment segment;
};

std::string describe(std::uint64_t record, const ntfs::AttributeSegment& s) {
    Stream probe;
    probe.type = s.type;
    probe.name = s.name;
    return "MFT record " + std::to_string(record) + ": attribute " + probe.label();
}

std::int64_t clusters_for(std::uint64_t bytes, std::uint32_t cluster_size) {
    return static_cast<std::int64_t>((bytes + cluster_size - 1) / cluster_size);
}

// A stream described by its first segment, its name kept in `pool`; the caller adds the runs.
Stream stream_from(std::uint64_t base, const ntfs::AttributeSegment& first, NamePool& pool) {
    Stream s;
    s.mft_record = base;
    s.type = first.type;
    s.name = pool.add(first.name);
    s.flags = first.flags;
    s.compression_unit = first.compression_unit;
    s.size = first.data_size;
    s.allocated_size = first.allocated_size;
    return s;
}

// Whether a segment is a whole attribute by itself (the common case, no attribute list).
bool is_whole(const ntfs::AttributeSegment& seg, std::uint32_t cluster_size) {
    return seg.lowest_vcn == 0 && seg.highest_vcn + 1 >= clusters_for(seg.allocated_size, cluster_size);
}

// Joins the segments of attributes spread over several records into streams. Segments of
// one attribute must tile its VCN range without gaps or overlaps.
void assemble_streams(std::vector<SegmentRef>& segments, std::uint32_t cluster_size, NamePool& pool,
                      std::vector<Stream>& streams) {
    std::ranges::sort(segments, [](const SegmentRef& a, const SegmentRef& b) {
        return std::tie(a.base, a.segment.type, a.segment.name, a.segment.lowest_vcn) <
               std::tie(b.base, b.segment.type, b.segment.name, b.segment.lowest_vcn);
    });
    for (std::size_t i = 0; i < segments.size();) {
        const auto& first = segments[i].segment;
        if (first.lowest_vcn != 0)
            throw Error(ErrorKind::Corrupt, describe(segments[i].base, first) + " lacks its first runlist segment");
        Stream s = stream_from(segments[i].base, first, pool);
        std::int64_t next_vcn = 0;
        std::size_t j = i;
        for (; j < segments.size() && segments[j].base == s.mft_record && segments[j].segment.type == s.type &&
               segments[j].segment.name == s.name;
             ++j) {
            auto& seg = segments[j].segment;
            if (seg.lowest_vcn != next_vcn)
                throw Error(ErrorKind::Corrupt, describe(s.mft_record, seg) + " has a runlist " +
                                                    (seg.lowest_vcn < next_vcn ? "overlap" : "gap") + " at VCN " +
                                                    std::to_string(std::min(seg.lowest_vcn, next_vcn)));
            s.extents.insert(s.extents.end(), seg.runs.begin(), seg.runs.end());
            next_vcn = seg.highest_vcn + 1;
        }
        // An attribute's allocation covers its data: fewer mapped clusters than the size
        // needs means extension records are missing.
        const std::int64_t needed = clusters_for(s.allocated_size, cluster_size);
        if (next_vcn < needed)
            throw Error(ErrorKind::Corrupt, describe(s.mft_record, first) + " maps " + std::to_string(next_vcn) +
                                                " of its " + std::to_string(needed) + " clusters");
        streams.push_back(std::move(s));
        i = j;
    }
}

// "cluster 7 <singular>" or "clusters 7-9 <plural>".
std::string cluster_text(std::int64_t first, std::int64_t end, const std::string& singular,
                         const std::string& plural) {
    return end - first == 1 ? "cluster " + std::to_string(first) + " " + singular
                            : "clusters " + std::to_string(first) + "-" + std::to_string(end - 1) + " " + plural;
}

VolumeFinding finding(const char* code, bool blocks_moves) {
    VolumeFinding f;
    f.code = code;
    f.blocks_moves = blocks_moves;
    return f;
}

// Gathers the conflicts of one finding: touching ranges with the same owners are joined
// before counting, and only the first kMaxListed are kept.
class Conflicts {
public:
    explicit Conflicts(VolumeFinding finding) : f_(std::move(finding)) {}

    void add(std::int64_t first, std::int64_t end, std::uint64_t record, std::uint64_t other) {
        if (open_ && open_->end == first && open_->record == record && open_->other == other) {
            open_->end = end;
            return;
        }
        close();
        open_ = ClusterConflict{first, end, record, other};
    }

    /// The finding with `message` built from its first conflict, or nullopt when none.
    template <class Describe>
    std::optional<VolumeFinding> take(Describe describe, const char* unit) {
        close();
        if (f_.conflict_count == 0) return std::nullopt;
        f_.message = describe(f_.conflicts.front());
        if (f_.conflict_count > 1)
            f_.message += " (" + std::to_string(f_.conflict_count) + " " + unit + ", " +
                          std::to_string(f_.clusters) + " clusters in all)";
        return std::move(f_);
    }

private:
    void close() {
        if (!open_) return;
        ++f_.conflict_count;
        f_.clusters += static_cast<std::uint64_t>(open_->end - open_->first);
        if (f_.conflicts.size() < VolumeFinding::kMaxListed) f_.conflicts.push_back(*open_);
        open_.reset();
    }

    VolumeFinding f_;
    std::optional<ClusterConflict> open_;
};

// Cross-links and clusters that files hold while $Bitmap calls them free: chkdsk's
// "cross-linked" and "free space marked as allocated" in reverse. Every cluster of a sound
// volume has at most one owner and is set in $Bitmap; a plan's free-space bookkeeping
// relies on both. O(runs · log runs) time, 24 bytes per run for the sweep.
void find_cluster_conflicts(VolumeMap& map) {
    struct Run {
        std::int64_t first;
        std::int64_t end;
        std::uint64_t record;
    };
    std::vector<Run> runs;
    std::size_t count = 0;
    for (const Stream& s : map.streams)
        for (const Extent& e : s.extents) count += e.lcn >= 0 && e.clusters > 0 ? 1 : 0;
    reserve_huge(runs, count);
    for (const Stream& s : map.streams)
        for (const Extent& e : s.extents)
            if (e.lcn >= 0 && e.clusters > 0) runs.push_back({e.lcn, e.lcn + e.clusters, s.mft_record});
    std::ranges::sort(runs, [](const Run& a, const Run& b) { return std::tie(a.first, a.record) < std::tie(b.first, b.record); });

    Conflicts cross(finding("CROSS_LINKED_CLUSTERS", true));
    Conflicts bitmap(finding("BITMAP_MISMATCH", true));
    std::int64_t cover_end = std::numeric_limits<std::int64_t>::min();  // the furthest run seen so far
    std::uint64_t cover_owner = 0;
    auto next_free = map.free.begin();
    for (const Run& r : runs) {
        if (r.first < cover_end) cross.add(r.first, std::min(r.end, cover_end), cover_owner, r.record);
        if (r.end > cover_end) {
            cover_end = r.end;
            cover_owner = r.record;
        }
        // Runs come in the order of their first cluster, so the first free interval that
        // does not end before a run only moves forward: one pass over $Bitmap's intervals,
        // not a tree lookup a run.
        while (next_free != map.free.end() && next_free->upper() <= r.first) ++next_free;
        for (auto it = next_free; it != map.free.end() && it->lower() < r.end; ++it)
            bitmap.add(std::max(r.first, it->lower()), std::min(r.end, it->upper()), r.record, r.record);
    }
    auto cross_text = [](const ClusterConflict& c) {
        return (c.record == c.other ? cluster_text(c.first, c.end, "is", "are") + " mapped twice by inode " +
                                          std::to_string(c.record)
                                    : cluster_text(c.first, c.end, "belongs", "belong") + " to both inode " +
                                          std::to_string(c.record) + " and inode " + std::to_string(c.other)) +
               " (cross-linked)";
    };
    auto bitmap_text = [](const ClusterConflict& c) {
        return cluster_text(c.first, c.end, "of inode " + std::to_string(c.record) + " is",
                            "of inode " + std::to_string(c.record) + " are") +
               " marked free in $Bitmap";
    };
    if (auto f = cross.take(cross_text, "cross-linked ranges")) map.findings.push_back(std::move(*f));
    if (auto f = bitmap.take(bitmap_text, "ranges in use but free")) map.findings.push_back(std::move(*f));
}

// A size in an attribute header that claims more than the runlist maps; the scan counts
// what is mapped and says so.
VolumeFinding size_finding(const char* code, const char* what, std::uint64_t claimed, std::uint64_t mapped) {
    VolumeFinding f = finding(code, false);
    f.message = std::string(what) + " claims " + std::to_string(claimed) + " bytes but its runlist maps " +
                std::to_string(mapped) + "; only those are counted";
    return f;
}

/// The NTFS volume in `partition` mounted read-only, once its boot sector is found sane and
/// the volume clean; `boot` gets the boot sector.
ntfs::Volume mount_checked(const DiskImage& image, const Partition& partition,
                           std::array<std::byte, 512>& boot) {
    boot = read_boot_sector(image, partition);
    if (!is_ntfs_boot_sector(boot))
        throw Error(ErrorKind::Unsupported,
                    "partition " + std::to_string(partition.number) + " holds no NTFS file system");
    check_geometry(boot, partition);
    ntfs::Volume handle{ntfs::Device(image, partition.start, partition.length)};
    handle.check_clean();
    return handle;
}

/// The figures of `map` that the mount alone gives: where it lies, its geometry, and the
/// records $MFT's runlist maps. Records are counted from what that runlist maps, never from
/// the size its header claims (a forged size would otherwise become the reported total).
void set_figures(VolumeMap& map, const Partition& partition, ntfs_volume* vol) {
    map.partition = partition.number;
    map.partition_offset = partition.start;
    map.cluster_size = vol->cluster_size;
    map.mft_record_size = vol->mft_record_size;
    map.total_clusters = vol->nr_clusters;
    const auto mft_claimed = static_cast<std::uint64_t>(std::max<s64>(0, vol->mft_na->data_size));
    const std::uint64_t mft_mapped = mapped_bytes(vol->mft_na, vol, "$MFT");
    if (mft_claimed > mft_mapped)
        map.findings.push_back(size_finding("MFT_SIZE_MISMATCH", "$MFT", mft_claimed, mft_mapped));
    map.mft_records_total = std::min(mft_claimed, mft_mapped) / vol->mft_record_size;
}

/// $MFT's stream `na` (its $DATA or $BITMAP) as libntfs-3g maps it, runlist mapped whole.
Stream mft_stream_of(ntfs_attr* na, AttrType type, const ntfs_volume* vol, const char* what) {
    (void)mapped_bytes(na, vol, what);  // maps the runlist, and checks it lies on the volume
    Stream s;
    s.type = static_cast<std::uint32_t>(type);
    s.size = static_cast<std::uint64_t>(std::max<s64>(0, na->data_size));
    s.allocated_size = static_cast<std::uint64_t>(std::max<s64>(0, na->allocated_size));
    s.placement = Placement::Unmovable;
    for (const runlist_element* r = na->rl; NAttrNonResident(na) && r != nullptr && r->length != 0; ++r)
        if (r->lcn >= 0 || r->lcn == LCN_HOLE)
            s.extents.push_back({r->vcn, r->lcn >= 0 ? r->lcn : Extent::kSparse, r->length});
    return s;
}

}  // namespace

bool has_ntfs_boot_sector(const DiskImage& image, const Partition& partition) {
    if (partition.length < 512 || partition.start > image.size() - 512) return false;
    return is_ntfs_boot_sector(read_boot_sector(image, partition));
}

VolumeMap read_ntfs_volume(const DiskImage& image, const Partition& partition, const Progress& progress,
                           VolumeDetail detail) {
    const bool names = detail == VolumeDetail::Full;
    std::array<std::byte, 512> boot{};
    const ntfs::Volume handle = mount_checked(image, partition, boot);
    ntfs_volume* vol = handle.get();

    VolumeMap map;
    set_figures(map, partition, vol);
    map.label = vol->vol_name != nullptr ? vol->vol_name : "";
    NTFS_BOOT_SECTOR bs;
    std::memcpy(&bs, boot.data(), sizeof bs);
    map.serial = le64_to_cpu(bs.volume_serial_number);
    map.ntfs_version = std::to_string(vol->major_ver) + "." + std::to_string(vol->minor_ver);
    if (vol->mft_zone_end > vol->mft_zone_start)
        map.mft_zone.add(ClusterSet::interval_type::right_open(vol->mft_zone_start, vol->mft_zone_end));

    // $MFT:$BITMAP says which of the records $MFT maps (set_figures) are allocated, and
    // records it marks must parse cleanly. Only the bitmap bytes those records need are
    // read, so a forged bitmap size costs nothing.
    const std::uint32_t record_size = vol->mft_record_size;
    const auto bitmap_claimed = static_cast<std::uint64_t>(std::max<s64>(0, vol->mftbmp_na->data_size));
    const std::uint64_t bitmap_mapped = mapped_bytes(vol->mftbmp_na, vol, "$MFT::$BITMAP");
    if (bitmap_claimed > bitmap_mapped)
        map.findings.push_back(
            size_finding("MFT_BITMAP_SIZE_MISMATCH", "$MFT::$BITMAP", bitmap_claimed, bitmap_mapped));
    const auto mft_bitmap =
        read_attribute(vol->mftbmp_na, std::min(bitmap_mapped, (map.mft_records_total + 7) / 8), "$MFT::$BITMAP");
    const std::uint64_t records = std::min<std::uint64_t>(map.mft_records_total, mft_bitmap.size() * 8);

    // map.files is filled in record order, so it is sorted as the scan goes; `choices`
    // runs beside it until extension records' names are merged.
    auto pool = std::make_shared<NamePool>();
    std::vector<NameChoice> choices;
    std::vector<std::tuple<std::uint64_t, std::uint16_t, ntfs::NameAttribute>> extension_names;
    // Whole attributes become streams at once; only attributes split over several records
    // wait in `pending`, so the scan never holds two copies of the runlists.
    std::vector<SegmentRef> pending;

    // Allocated records bound the files and, closely, the streams: reserving avoids the
    // doubling reallocations that would otherwise set the peak memory of a large scan. The
    // streams' reservation is not trimmed afterwards: its unused tail is address space the
    // scan never touches (no resident memory), whereas shrink_to_fit would copy the whole
    // vector and hold both copies at once.
    std::uint64_t allocated_records = 0;
    for (std::uint8_t byte : mft_bitmap) allocated_records += static_cast<std::uint64_t>(std::popcount(byte));
    // In huge pages where the kernel gives them (advise_huge_pages): at a million records
    // these are over 100 MB, a 4 KiB fault at a time otherwise.
    reserve_huge(map.files.edit(), allocated_records);
    reserve_huge(choices, allocated_records);
    reserve_huge(map.streams, allocated_records);

    constexpr std::uint64_t kChunkBytes = std::uint64_t{2} << 20;  // 2 MiB sequential reads
    const std::uint64_t chunk_records =
        std::clamp<std::uint64_t>(kChunkBytes / record_size, 1, std::max<std::uint64_t>(records, 1));
    // Reads the chunk of records from `first` into `into`.
    const auto read_chunk = [&](std::uint64_t first, std::vector<std::byte>& into) {
        const auto want = static_cast<s64>(std::min(chunk_records, records - first) * record_size);
        errno = 0;  // a short read sets none
        if (ntfs_attr_pread(vol->mft_na, static_cast<s64>(first * record_size), want, into.data()) != want)
            throw Error(ErrorKind::Corrupt, "cannot read $MFT at record " + std::to_string(first) + ": " +
                                                ntfs::library_reason(errno));
    };
    // Each chunk is read on a thread of its own while the one before it is parsed: copying
    // $MFT out of the host's page cache was a quarter of the scan. Only that thread reads
    // through the volume meanwhile; the parser's libntfs-3g calls (fixups, mapping pairs,
    // names) work on the record alone and read the volume's constants. Declared after the
    // buffers, `ahead` waits for its read before they go, on every way out.
    std::vector<std::byte> chunk(chunk_records * record_size);
    std::vector<std::byte> next(chunk.size());
    std::future<void> ahead;
    if (records > 0) ahead = std::async(std::launch::async, read_chunk, 0, std::ref(next));
    ntfs::MftRecord record;
    for (std::uint64_t first = 0; first < records; first += chunk_records) {
        progress.update(first, records);
        ahead.get();  // rethrows the read's failure
        std::swap(chunk, next);
        if (first + chunk_records < records)
            ahead = std::async(std::launch::async, read_chunk, first + chunk_records, std::ref(next));
        const std::uint64_t count = std::min(chunk_records, records - first);
        for (std::uint64_t i = 0; i < count; ++i) {
            const std::uint64_t number = first + i;
            if (((mft_bitmap[number / 8] >> (number % 8)) & 1) == 0) continue;
            const std::span<std::byte> bytes(chunk.data() + i * record_size, record_size);
            if (!ntfs::parse_mft_record(*vol, bytes, number, record, names)) continue;
            ++map.mft_records_in_use;
            const bool extension = record.base != number;
            for (auto& seg : record.segments) {
                if (!extension && is_whole(seg, map.cluster_size)) {
                    Stream& stream = map.streams.emplace_back(stream_from(number, seg, *pool));
                    stream.extents = std::move(seg.runs);
                } else {
                    pending.push_back({record.base, record.base_sequence, extension, std::move(seg)});
                }
            }
            if (extension) {
                if (names)
                    for (auto& name : record.names)
                        extension_names.emplace_back(record.base, record.base_sequence, std::move(name));
            } else {
                FileEntry& entry = map.files.emplace_back();
                NameChoice& choice = choices.emplace_back();
                entry.mft_record = number;
                entry.parent = kRootRecord;
                entry.directory = record.directory;
                choice.sequence = record.sequence;
                if (const ntfs::NameAttribute* name = names ? best_name(record.names) : nullptr)
                    offer(entry, choice, *name, *pool);
            }
        }
    }
    progress.update(records, records);
    chunk = {};
    next = {};

    // Extension records of a base that is gone (or reused, so its sequence moved on) are
    // leftovers NTFS no longer reads; so do we.
    auto live_base = [&](std::uint64_t base, std::uint16_t sequence) -> std::ptrdiff_t {
        auto it = std::ranges::lower_bound(map.files, base, {}, &FileEntry::mft_record);
        if (it == map.files.end() || it->mft_record != base) return -1;
        const auto index = it - map.files.begin();
        if (sequence != 0 && choices[static_cast<std::size_t>(index)].sequence != sequence) return -1;
        return index;
    };
    for (auto& [base, sequence, name] : extension_names)
        if (const auto owner = live_base(base, sequence); owner >= 0)
            offer(map.files.edit()[static_cast<std::size_t>(owner)], choices[static_cast<std::size_t>(owner)], name, *pool);
    std::erase_if(pending, [&](const SegmentRef& s) { return s.extension && live_base(s.base, s.base_sequence) < 0; });
    extension_names = {};
    choices = {};
    const auto whole = static_cast<std::ptrdiff_t>(map.streams.size());
    assemble_streams(pending, map.cluster_size, *pool, map.streams);
    pending = {};
    map.names = std::move(pool);
    // Whole attributes came in record order and assembled ones in map_order, so two sorted
    // runs are joined, with a buffer the size of the second: sorting a million streams
    // was 7 % of the scan. Attributes of one record in NTFS's collation of their names,
    // which is not map_order's, are sorted the long way.
    const auto by_map_order = [](const Stream& a, const Stream& b) { return map_order(a) < map_order(b); };
    const auto assembled = map.streams.begin() + whole;
    if (std::is_sorted(map.streams.begin(), assembled, by_map_order))
        std::inplace_merge(map.streams.begin(), assembled, map.streams.end(), by_map_order);
    else
        std::ranges::sort(map.streams, by_map_order);
    // $Bitmap needs one bit per cluster; a longer claimed size is not read.
    const std::uint64_t bitmap_needed = (static_cast<std::uint64_t>(map.total_clusters) + 7) / 8;
    map.free = free_extents(
        read_attribute(vol->lcnbmp_na, std::min(bitmap_needed, mapped_bytes(vol->lcnbmp_na, vol, "$Bitmap")), "$Bitmap"),
        map.total_clusters);
    find_cluster_conflicts(map);
    ntfs::classify_placement(map);
    if (!names) map.files = {};  // the scan needed them to match extension records to their files
    return map;
}

VolumeMap read_mft_map(const DiskImage& image, const Partition& partition) {
    std::array<std::byte, 512> boot{};
    const ntfs::Volume handle = mount_checked(image, partition, boot);
    ntfs_volume* vol = handle.get();
    VolumeMap map;
    set_figures(map, partition, vol);
    map.streams.push_back(mft_stream_of(vol->mft_na, AttrType::Data, vol, "$MFT"));
    map.streams.push_back(mft_stream_of(vol->mftbmp_na, AttrType::Bitmap, vol, "$MFT::$BITMAP"));
    return map;
}

}  // namespace guestfrag
