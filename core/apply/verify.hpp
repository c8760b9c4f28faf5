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
#include <string>
#include <utility>
#include <vector>

#include "core/model/volume_map.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class DiskImage;

/// XXH3-64 of every stream's clusters (holes as zeros), one per `volume.streams` entry in
/// its order; nullopt for the streams `skip` names. Read from `image` through `volume`'s
/// runlists. Throws what DiskImage::read throws and Error(Cancelled) from `progress`
/// (streams). Cost: reads every allocated cluster of the streams hashed once; 16 bytes a
/// stream.
[[nodiscard]] std::vector<std::optional<std::uint64_t>> stream_digests(
    const DiskImage& image, const VolumeMap& volume, const Progress& progress = {},
    const std::function<bool(const Stream&)>& skip = {});

/// The first stream of `before` with a digest in `want` that `after` lacks or holds with
/// another digest in `got` (each stream_digests of its own map), as "record R LABEL";
/// nothing when every one matches. Streams are matched in map_order. O(streams).
[[nodiscard]] std::optional<std::string> digest_difference(const VolumeMap& before,
                                                           const std::vector<std::optional<std::uint64_t>>& want,
                                                           const VolumeMap& after,
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
/// `moved` (base record numbers). Throws what DiskImage::read throws and Error(Corrupt) for a
/// map without $MFT's streams. Cost: reads both disks' $MFT once, 2 MiB of memory.
[[nodiscard]] ChangedRecords changed_records(const DiskImage& input, const VolumeMap& before,
                                             const DiskImage& output, const VolumeMap& after,
                                             const std::set<std::uint64_t>& moved);

/// What libntfs-3g did to the attribute lists of moved files that the prediction adopts
/// (attribute_list_changes).
struct AttributeListChanges {
    std::uint64_t freed = 0;  ///< clusters freed from lists
    std::uint64_t taken = 0;  ///< clusters lists took
    ClusterSet gone;          ///< those freed clusters
    ClusterSet added;         ///< those taken clusters
    std::set<std::uint64_t> records;  ///< files whose $ATTRIBUTE_LIST is as `actual` holds it
};

/// The first difference between two maps of a volume as text (free space, the set of
/// streams, a stream's runs with LCN-contiguous neighbours merged), or nothing when the
/// allocation is the same. `adopted` (attribute_list_changes) amends `expected`: its free
/// clusters, and the attribute lists it takes from `actual`. Streams are matched in
/// map_order, the order both maps are sorted in. O(streams + runs).
[[nodiscard]] std::optional<std::string> allocation_difference(const VolumeMap& expected, const VolumeMap& actual,
                                                               const AttributeListChanges& adopted = {});

/// What libntfs-3g does to the attribute lists of the files in `moved` when it lays their
/// new runlists out, as amendments to `predicted`: a non-resident $ATTRIBUTE_LIST that
/// `actual` holds shorter (a VCN prefix of the predicted runs) or not at all has the rest of
/// its clusters freed (ntfs_attr_record_rm); one that `actual` holds longer (the predicted
/// runs a VCN prefix of it), or non-resident where it was resident or absent, because the
/// longer runlist needed more entries, takes the clusters it added, which must have been
/// free. Anything else is left for allocation_difference to report. An overlay rather than
/// an edited copy: the prediction of a large volume is not held twice.
/// O(moved files · log streams).
[[nodiscard]] AttributeListChanges attribute_list_changes(const VolumeMap& predicted, const VolumeMap& actual,
                                                          const std::set<std::uint64_t>& moved);

}  // namespace guestfrag
