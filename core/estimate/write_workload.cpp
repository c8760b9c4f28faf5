// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/write_workload.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/estimate/new_file_placer.hpp"
#include "core/estimate/stream_ios.hpp"

namespace guestfrag {

namespace {

/// Records 0–23 are NTFS metadata ($MFT … $Extend) and reserved records: not user files.
constexpr std::uint64_t kFirstUserRecord = 24;

/// Whether `s` says what size a new file "like the volume's files" has: a user file's
/// unnamed $DATA with data, movable, and neither sparse nor compressed (their size is not
/// what they occupy, and new files are written plain).
bool sizes_a_file(const Stream& s) {
    return s.type == static_cast<std::uint32_t>(AttrType::Data) && s.name.empty() && s.size > 0 &&
           s.mft_record >= kFirstUserRecord && s.placement == Placement::Movable &&
           (s.flags & (Stream::kSparse | Stream::kCompressed)) == 0;
}

}  // namespace

std::vector<std::uint64_t> write_file_sizes(const VolumeMap& volume, std::uint64_t files) {
    std::vector<const Stream*> population;
    for (const Stream& s : volume.streams)
        if (sizes_a_file(s)) population.push_back(&s);
    if (population.empty())
        throw Error(ErrorKind::Unsupported, "the volume has no files to take the sizes of new files from");
    std::stable_sort(population.begin(), population.end(),
                     [](const Stream* a, const Stream* b) { return a->mft_record < b->mft_record; });

    // i < files ≤ Workload::kMaxWriteFiles (10^7) and |P| < 2^40, so i · |P| stays in 64 bits;
    // a caller going beyond that gets a wrapped but still in-range index.
    std::vector<std::uint64_t> sizes;
    sizes.reserve(files);
    const std::uint64_t n = population.size();
    for (std::uint64_t i = 0; i < files; ++i) sizes.push_back(population[i * n / files % n]->size);
    return sizes;
}

WriteIos write_ios(const VolumeMap& volume, std::span<const std::uint64_t> sizes, std::uint64_t max_io) {
    check_max_io(max_io);
    WriteIos result;
    result.outcome.files = sizes.size();
    if (volume.cluster_size == 0) throw Error(ErrorKind::Unsupported, "cluster size 0");
    const std::uint64_t cs = volume.cluster_size;

    NewFilePlacer placer(volume);

    Stream file;  // the file being written, reused
    file.type = static_cast<std::uint32_t>(AttrType::Data);
    for (const std::uint64_t size : sizes) {
        const auto clusters = static_cast<std::int64_t>((size + cs - 1) / cs);
        file.extents = placer.place(clusters);
        if (file.extents.empty() && clusters > 0) continue;  // does not fit: skipped, smaller ones may
        file.size = size;
        ++result.outcome.files_written;
        result.outcome.bytes_written += size;
        const std::uint64_t fragments = file.fragments();
        result.outcome.fragments += fragments;
        if (fragments > 1) ++result.outcome.fragmented_files;
        const std::size_t first = result.ios.size();
        append_stream_ios(volume, file, max_io, result.ios);
        // Creating the file writes its data: the same IOs as reading it, as writes.
        for (std::size_t i = first; i < result.ios.size(); ++i) result.ios[i].write = true;
    }
    return result;
}

NewFilePlacer::NewFilePlacer(const VolumeMap& volume)
    : volume_(&volume),
      allocator_(volume.free - volume.mft_zone, volume.mft_zone.empty() ? 0 : boost::icl::upper(volume.mft_zone)) {}

std::vector<Extent> NewFilePlacer::place(std::int64_t clusters, std::int64_t hint) {
    if (clusters > allocator_.free_clusters() && !zone_released_) {
        // NTFS gives up the MFT zone to data only when the rest of the volume is full.
        allocator_ = ClusterAllocator(allocator_.remaining() + (volume_->free & volume_->mft_zone), allocator_.hint());
        zone_released_ = true;
    }
    return allocator_.allocate(clusters, hint);
}

}  // namespace guestfrag
