// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <boost/icl/interval_set.hpp>

#include "core/model/shared_vector.hpp"

namespace guestfrag {

/// Cluster ranges [lower, upper) of one volume.
using ClusterSet = boost::icl::interval_set<std::int64_t>;

/// One run of a non-resident attribute, as its mapping pairs say. lcn == kSparse marks a
/// hole (sparse or compressed) that occupies no clusters.
struct Extent {
    static constexpr std::int64_t kSparse = -1;
    std::int64_t vcn = 0;
    std::int64_t lcn = 0;
    std::int64_t clusters = 0;

    friend bool operator==(const Extent&, const Extent&) = default;
};

/// NTFS attribute type codes we name in reports.
enum class AttrType : std::uint32_t {
    AttributeList = 0x20,
    Data = 0x80,
    IndexAllocation = 0xA0,
    Bitmap = 0xB0,
    ReparsePoint = 0xC0,
    EaInformation = 0xD0,
    Ea = 0xE0,
    LoggedUtilityStream = 0x100,
};

/// Why a stream may not be moved by a plan.
enum class Placement : std::uint8_t {
    Movable,
    Unmovable,  ///< NTFS metadata the file system pins (docs/design.md §3)
    Excluded,   ///< movable in principle but left alone (pagefile, hiberfil, VSS store)
};

/// Text that lives as long as the program: a string literal, or none (""). A pointer where
/// a std::string_view would take 16 bytes: Stream::reason is one a stream, and a million
/// streams are held twice while a plan is made (before and after).
class StaticText {
public:
    constexpr StaticText() = default;
    constexpr StaticText(const char* text) : text_(text) {}  // NOLINT(google-explicit-constructor): literals
    [[nodiscard]] std::string_view view() const noexcept { return text_ == nullptr ? std::string_view() : text_; }
    operator std::string_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)
    [[nodiscard]] bool empty() const noexcept { return text_ == nullptr || *text_ == '\0'; }
    friend bool operator==(StaticText a, std::string_view b) noexcept { return a.view() == b; }

private:
    const char* text_ = nullptr;
};

/// A non-resident attribute of a file record: the unit of fragmentation (docs/design.md §3).
/// Fields are ordered largest first so the struct has no padding holes: a volume holds one
/// per non-resident attribute, hundreds of thousands on a system disk.
struct Stream {
    static constexpr std::uint16_t kCompressed = 0x0001;
    static constexpr std::uint16_t kEncrypted = 0x4000;
    static constexpr std::uint16_t kSparse = 0x8000;

    std::uint64_t mft_record = 0;  ///< base record number of the owning file
    std::uint64_t size = 0;        ///< data size in bytes
    std::uint64_t allocated_size = 0;
    std::uint32_t type = 0;        ///< attribute type code (AttrType)
    std::uint16_t flags = 0;       ///< ATTR_FLAGS bits above
    Placement placement = Placement::Movable;
    /// log2 of the compression unit in clusters, as the attribute header holds it (byte
    /// 0x22): 4 (16 clusters) on compressed and, as Windows and libntfs-3g write them,
    /// sparse streams; 0 otherwise.
    std::uint8_t compression_unit = 0;
    /// Attribute name, UTF-8, "" when unnamed. Not owned, like FileEntry::name: the reader
    /// points it into VolumeMap::names. Views, not strings, because nearly every stream is
    /// an unnamed $DATA and a std::string costs 32 bytes a stream either way.
    std::string_view name;
    /// Why unmovable or excluded, "" when movable: always one of classify_placement's
    /// literals, so it needs no storage.
    StaticText reason;
    std::vector<Extent> extents;   ///< runs in VCN order, holes included

    /// "$DATA", "$DATA:name", "$INDEX_ALLOCATION:$I30", ... (the JSON "stream" field).
    [[nodiscard]] std::string label() const;
    /// label() == `label`, without building the label.
    [[nodiscard]] bool has_label(std::string_view label) const;
    /// Runs after merging LCN-contiguous neighbours, holes not counted (docs/design.md §3).
    [[nodiscard]] std::uint64_t fragments() const;
    /// Clusters actually allocated (holes excluded).
    [[nodiscard]] std::int64_t allocated_clusters() const;
    /// Clusters of one compression unit of a compressed or sparse stream, the unit NTFS
    /// moves such a stream in (docs/planner.md §4); 1 for every other stream.
    [[nodiscard]] std::int64_t unit_clusters() const;
};

/// Stream::label of a stream of attribute type `type` named `name`.
[[nodiscard]] std::string stream_label(std::uint32_t type, std::string_view name);

/// Stream::fragments of `runs` (in VCN order): a stream's own, or those of one a plan is
/// editing.
[[nodiscard]] std::uint64_t fragments_of(std::span<const Extent> runs);

/// The key VolumeMap::streams is sorted by: (mft_record, type, name). Two maps of one
/// volume are compared by walking both in this order.
[[nodiscard]] inline auto map_order(const Stream& s) { return std::tie(s.mft_record, s.type, s.name); }

/// Append-only storage for the names of a volume's files and attributes: names are packed
/// into 64 KiB blocks instead of one heap string each (most file names are longer than
/// std::string's inline buffer). A view returned by add() stays valid for the pool's
/// lifetime whatever is added later. Not copyable; VolumeMap shares it (std::shared_ptr) so
/// copies of a map keep their names. Not safe for concurrent add().
class NamePool {
public:
    NamePool() = default;
    NamePool(const NamePool&) = delete;
    NamePool& operator=(const NamePool&) = delete;

    /// Copies `text` into the pool; returns the copy ("" needs no storage). O(text size).
    std::string_view add(std::string_view text);
    /// Bytes allocated for blocks, used or not.
    [[nodiscard]] std::size_t allocated_bytes() const { return allocated_; }

private:
    static constexpr std::size_t kBlockSize = 64 * 1024;
    std::vector<std::unique_ptr<char[]>> blocks_;
    char* next_ = nullptr;   ///< free space in the current block
    std::size_t left_ = 0;   ///< bytes free at next_
    std::size_t allocated_ = 0;
};

/// The root directory's record number on every NTFS volume.
inline constexpr std::uint64_t kRootRecord = 5;

/// A file record in use (base records only), enough to name it.
struct FileEntry {
    std::uint64_t mft_record = 0;
    /// Parent directory's record number. NTFS numbers records in 48 bits: the flag beside it
    /// keeps an entry at 32 bytes, not 40 (a volume holds one a file, millions of them).
    std::uint64_t parent : 63 = 0;
    bool directory : 1 = false;
    /// Win32 (or POSIX) long name, UTF-8. Not owned: read_ntfs_volume() points it into
    /// VolumeMap::names; hand-built maps may point it at string literals or any storage
    /// that outlives the map.
    std::string_view name;
};

/// Clusters [first, end) that the volume's metadata gives to two owners, or to a file while
/// $Bitmap calls them free: one line of a VolumeFinding.
struct ClusterConflict {
    std::int64_t first = 0;
    std::int64_t end = 0;
    std::uint64_t record = 0;  ///< the file (base MFT record) holding the clusters
    std::uint64_t other = 0;   ///< the second owner of cross-linked clusters; == record otherwise

    friend bool operator==(const ClusterConflict&, const ClusterConflict&) = default;
};

/// A contradiction inside a volume's own metadata, found by the scan and reported the way
/// chkdsk would (docs/design.md §6.1). Codes: CROSS_LINKED_CLUSTERS, BITMAP_MISMATCH (both
/// block moves, see require_movable in core/plan/apply.hpp: nobody knows who owns those clusters), MFT_SIZE_MISMATCH and
/// MFT_BITMAP_SIZE_MISMATCH (sizes that claim more than their runlists map; counts use what
/// is mapped).
struct VolumeFinding {
    /// Conflicts kept per finding; the counts below cover all of them.
    static constexpr std::size_t kMaxListed = 16;

    std::string code;
    std::string message;                    ///< one line: the first instance and the totals
    bool blocks_moves = false;              ///< planning this volume is refused
    std::vector<ClusterConflict> conflicts; ///< the first kMaxListed, by cluster
    std::uint64_t conflict_count = 0;       ///< all conflicts
    std::uint64_t clusters = 0;             ///< clusters in all conflicts
};

/// Everything guestfrag knows about one NTFS volume's cluster allocation.
/// Plain data, built by core/ntfs, consumed by analyzers/, the planner and the estimator.
struct VolumeMap {
    int partition = 0;                 ///< Partition::number
    std::uint64_t partition_offset = 0;  ///< byte offset of the volume on the virtual disk
    std::uint32_t cluster_size = 0;
    std::uint32_t mft_record_size = 0;
    std::int64_t total_clusters = 0;
    std::string label;                 ///< volume label, UTF-8
    std::uint64_t serial = 0;          ///< volume serial number from the boot sector
    std::string ntfs_version;          ///< "3.1"

    std::uint64_t mft_records_total = 0;   ///< records that $MFT's data holds
    std::uint64_t mft_records_in_use = 0;  ///< base and extension records with IN_USE set
    ClusterSet mft_zone;                   ///< the reserved MFT zone as NTFS computes it

    ClusterSet free;                       ///< clear bits of $Bitmap within the volume
    ClusterSet unmovable;                  ///< clusters the file system pins (docs/design.md §3)
    SharedVector<FileEntry> files;         ///< sorted by mft_record; copies of the map share it
    std::shared_ptr<const NamePool> names; ///< files[].name and streams[].name (shared by copies)
    std::vector<Stream> streams;           ///< sorted by map_order
    std::vector<VolumeFinding> findings;   ///< inconsistencies of the metadata, none on a sound volume

    [[nodiscard]] std::int64_t free_clusters() const;
    /// Full path of a record ("\\dir\\file"), "\\" for the root; "<orphan>\\name" when a
    /// parent is missing. O(depth · log files).
    [[nodiscard]] std::string path_of(std::uint64_t mft_record) const;
    [[nodiscard]] const FileEntry* find_file(std::uint64_t mft_record) const;
};

}  // namespace guestfrag
