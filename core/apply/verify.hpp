// SPDX-License-Identifier: GPL-2.0-or-later
// The checks that prove a disk holds what a plan predicted, each independent of libntfs-3g's
// writing code: guestfrag's own MFT walk of the new disk against the plan's after-state,
// stream contents hashed through the runlists each disk's own walk found.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "core/model/stream_label.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class DiskImage;

/// XXH3-64 of every stream's clusters (holes as zeros), one per `volume.streams` entry in
/// its order; nullopt for the streams `skip` names. Read from `image` through `volume`'s
/// runlists, by `workers` threads (the calling one among them), which take pieces of about
/// equal bytes in turn. Throws what DiskImage::read throws and Error(Cancelled) from
/// `progress` (streams). Cost: reads every allocated cluster of the streams hashed once;
/// 16 bytes a stream and 1 MiB a worker.
[[nodiscard]] std::vector<std::optional<std::uint64_t>> stream_digests(
    const DiskImage& image, const VolumeMap& volume, const Progress& progress = {},
    const std::function<bool(const Stream&)>& skip = {}, unsigned workers = 1);

/// A volume as the proofs of a copy expect to find it (docs/apply.md step 5), reduced to
/// what they compare: the free clusters; each stream's key, a digest of its runs and the
/// digest of the input's contents; whole, the attribute lists of the files whose streams
/// moved; and the input's $MFT. 40 bytes a stream where a map takes over 110: neither
/// the input's map nor the prediction is held while the copy is analysed and hashed (at a
/// million streams each is about 90 MB).
struct ExpectedVolume {
    struct Entry {
        std::uint64_t record = 0;
        std::uint32_t type = 0;
        bool hashed = false;         ///< `contents` holds the input stream's digest
        StreamLabel name;            ///< the attribute's name, "" when unnamed
        std::uint64_t runs = 0;      ///< runs_digest of the runs expected
        std::uint64_t contents = 0;  ///< stream_digests of the input's stream
    };
    /// The input's map with only $MFT's streams and no files: what changed_records reads.
    VolumeMap input_mft;
    std::vector<std::uint64_t> moved;  ///< files whose streams moved (base records), sorted
    ClusterSet free;                   ///< the free clusters expected
    std::vector<Entry> streams;        ///< every stream, in map_order
    /// The $ATTRIBUTE_LIST streams of `moved` files as expected, by record: libntfs-3g may
    /// lay them out anew (attribute_list_changes).
    std::vector<Stream> lists;
    std::uint64_t fragments_before = 0;    ///< Stream::fragments summed over the input
    std::uint64_t fragments_expected = 0;  ///< likewise over the runs expected
};

/// XXH3-64 of `runs` with LCN-contiguous neighbours merged: two readers (or a prediction and
/// a reader) may split the same allocation differently. O(runs).
[[nodiscard]] std::uint64_t runs_digest(std::span<const Extent> runs);

/// `before` as `plan` leaves it (replay_plan), for the proofs: `moved` the files of the moves
/// done (sorted), `contents` the input's stream_digests of `before` (empty: none). Throws
/// apply_plan's errors. O(streams + runs + moves · log).
[[nodiscard]] ExpectedVolume expect_volume(const VolumeMap& before, const Plan& plan, std::vector<std::uint64_t> moved,
                                           const std::vector<std::optional<std::uint64_t>>& contents = {});

/// The first stream of `expected` with the input's digest that `after` lacks or holds with
/// another digest in `got` (stream_digests of `after`; a stream it skipped is proved
/// otherwise), as "record R LABEL"; nothing when every one matches. The attribute list of a
/// moved file is not compared: the file's new runlist rewrites it, or removes it when the
/// runlist fits its base record again. Streams are matched in map_order. O(streams).
[[nodiscard]] std::optional<std::string> digest_difference(const ExpectedVolume& expected, const VolumeMap& after,
                                                           const std::vector<std::optional<std::uint64_t>>& got);

/// Where $Bitmap (the map's free space) and the union of every stream's runs disagree, as
/// text, or nothing when the used clusters are exactly those the runlists claim.
/// O(runs · log runs).
[[nodiscard]] std::optional<std::string> bitmap_difference(const VolumeMap& volume);

/// What the moves of a plan rightly change besides clusters: the records of the files whose
/// streams moved. A file's records are its base record and every record whose base
/// reference names it (its extension records, on either disk).
struct ChangedRecords {
    std::uint64_t records = 0;  ///< records whose bytes differ
    std::uint64_t freed = 0;    ///< of them, records in use before and free after (extension records)
    std::uint64_t added = 0;    ///< records free before and in use after (new extension records)
    /// The first change that is not a record of a moved file, or a moved file none of whose
    /// records changed, as text; nothing when every change is one the moves explain.
    std::optional<std::string> difference;
};

/// Compares every $MFT record of `before` (on `input`) with `after` (on `output`), each read
/// through its own disk's $MFT runlist, and $MFT's $BITMAP bit by bit, against the files in
/// `moved` (base record numbers, sorted). Each map needs only $MFT's streams (read_mft_map).
/// Throws what DiskImage::read throws, Error(Corrupt) for a map without $MFT's streams and
/// Error(Cancelled) once `stop` is requested. Cost: reads both disks' $MFT once, 4 MiB of
/// memory.
[[nodiscard]] ChangedRecords changed_records(const DiskImage& input, const VolumeMap& before,
                                             const DiskImage& output, const VolumeMap& after,
                                             std::span<const std::uint64_t> moved,
                                             const std::stop_token& stop = {});

/// Where `mft` (read_mft_map's $MFT, as the mount maps it) and `volume` (read_ntfs_volume's
/// map of the same volume, from its records) disagree about $MFT: its record size, its
/// records, the runs of its $DATA or $BITMAP; nothing when they agree. Records read through
/// `mft` are then those of `volume`. O(runs of $MFT).
[[nodiscard]] std::optional<std::string> mft_map_difference(const VolumeMap& mft, const VolumeMap& volume);

/// What libntfs-3g did to the attribute lists of moved files that the prediction adopts
/// (attribute_list_changes).
struct AttributeListChanges {
    std::uint64_t freed = 0;  ///< clusters freed from lists
    std::uint64_t taken = 0;  ///< clusters lists took
    ClusterSet gone;          ///< those freed clusters
    ClusterSet added;         ///< those taken clusters
    std::set<std::uint64_t> records;  ///< files whose $ATTRIBUTE_LIST is as `actual` holds it
};

/// The first difference between the allocation `expected` and the map `actual` as text
/// (free space, the set of streams, a stream's runs), or nothing when they are the same.
/// `adopted` (attribute_list_changes) amends `expected`: its free clusters, and the
/// attribute lists it takes from `actual`. Streams are matched in map_order, the order both
/// are sorted in. O(streams + runs).
[[nodiscard]] std::optional<std::string> allocation_difference(const ExpectedVolume& expected, const VolumeMap& actual,
                                                               const AttributeListChanges& adopted = {});

/// What libntfs-3g does to the attribute lists of `expected.moved` files when it lays their
/// new runlists out, as amendments to `expected`: a non-resident $ATTRIBUTE_LIST that
/// `actual` holds shorter (a VCN prefix of the expected runs) or not at all has the rest of
/// its clusters freed (ntfs_attr_record_rm); one that `actual` holds longer (the expected
/// runs a VCN prefix of it), or non-resident where it was resident or absent, because the
/// longer runlist needed more entries, takes the clusters it added, which must have been
/// free. Anything else is left for allocation_difference to report.
/// O(moved files · log moved files).
[[nodiscard]] AttributeListChanges attribute_list_changes(const ExpectedVolume& expected, const VolumeMap& actual);

}  // namespace guestfrag
