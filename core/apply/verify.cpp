// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/verify.hpp"

#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kBlock = 1 << 20;

struct FreeState {
    void operator()(XXH3_state_t* s) const noexcept { XXH3_freeState(s); }
};

/// Runs with neighbours contiguous in both VCN and LCN merged: two readers (or a prediction
/// and a reader) may split the same allocation differently.
std::vector<Extent> merged(const std::vector<Extent>& extents) {
    std::vector<Extent> out;
    for (const Extent& e : extents) {
        if (!out.empty()) {
            Extent& prev = out.back();
            const bool holes = prev.lcn == Extent::kSparse && e.lcn == Extent::kSparse;
            const bool contiguous = prev.lcn != Extent::kSparse && e.lcn != Extent::kSparse &&
                                    prev.lcn + prev.clusters == e.lcn;
            if (prev.vcn + prev.clusters == e.vcn && (holes || contiguous)) {
                prev.clusters += e.clusters;
                continue;
            }
        }
        out.push_back(e);
    }
    return out;
}

std::string runs_text(const std::vector<Extent>& extents) {
    std::string out;
    for (const Extent& e : extents) {
        if (!out.empty()) out += ' ';
        out += std::to_string(e.vcn) + ":" + (e.lcn == Extent::kSparse ? "hole" : std::to_string(e.lcn)) + "+" +
               std::to_string(e.clusters);
        if (out.size() > 200) return out + " ...";
    }
    return out;
}

std::string first_interval(const ClusterSet& set) {
    const auto& i = *set.begin();
    return "LCN " + std::to_string(i.lower()) + "-" + std::to_string(i.upper() - 1);
}

}  // namespace

std::map<std::pair<std::uint64_t, std::string>, std::uint64_t> stream_digests(const DiskImage& image,
                                                                               const VolumeMap& volume,
                                                                               const Progress& progress) {
    std::map<std::pair<std::uint64_t, std::string>, std::uint64_t> out;
    std::unique_ptr<XXH3_state_t, FreeState> state(XXH3_createState());
    if (!state) throw std::bad_alloc();
    std::vector<std::byte> block(kBlock);
    const std::vector<std::byte> zeros(kBlock);
    const std::uint64_t cs = volume.cluster_size;
    for (std::size_t i = 0; i < volume.streams.size(); ++i) {
        progress.update(i, volume.streams.size());
        const Stream& s = volume.streams[i];
        XXH3_64bits_reset(state.get());
        for (const Extent& e : s.extents) {
            const std::uint64_t bytes = static_cast<std::uint64_t>(e.clusters) * cs;
            for (std::uint64_t done = 0; done < bytes;) {
                const std::uint64_t n = std::min(kBlock, bytes - done);
                if (e.lcn == Extent::kSparse) {
                    XXH3_64bits_update(state.get(), zeros.data(), n);
                } else {
                    image.read(volume.partition_offset + static_cast<std::uint64_t>(e.lcn) * cs + done,
                               std::span<std::byte>(block.data(), n));
                    XXH3_64bits_update(state.get(), block.data(), n);
                }
                done += n;
            }
        }
        out[{s.mft_record, s.label()}] = XXH3_64bits_digest(state.get());
    }
    progress.update(volume.streams.size(), volume.streams.size());
    return out;
}

std::optional<std::string> allocation_difference(const VolumeMap& expected, const VolumeMap& actual) {
    if (expected.free != actual.free) {
        const ClusterSet missing = expected.free - actual.free;
        const ClusterSet extra = actual.free - expected.free;
        return missing.empty() ? "free space differs: " + first_interval(extra) + " is free but should be used"
                               : "free space differs: " + first_interval(missing) + " is used but should be free";
    }
    auto key = [](const Stream& s) { return std::make_pair(s.mft_record, s.label()); };
    std::map<std::pair<std::uint64_t, std::string>, const Stream*> actual_streams;
    for (const Stream& s : actual.streams) actual_streams[key(s)] = &s;
    for (const Stream& s : expected.streams) {
        const auto it = actual_streams.find(key(s));
        const std::string name = "record " + std::to_string(s.mft_record) + " " + s.label();
        if (it == actual_streams.end()) return name + " is missing";
        const std::vector<Extent> want = merged(s.extents);
        const std::vector<Extent> got = merged(it->second->extents);
        if (want != got) return name + " has runs " + runs_text(got) + ", the plan predicted " + runs_text(want);
        actual_streams.erase(it);
    }
    if (!actual_streams.empty())
        return "record " + std::to_string(actual_streams.begin()->first.first) + " " +
               actual_streams.begin()->first.second + " was not there before";
    return std::nullopt;
}

std::optional<std::string> bitmap_difference(const VolumeMap& volume) {
    ClusterSet claimed;
    for (const Stream& s : volume.streams)
        for (const Extent& e : s.extents)
            if (e.lcn != Extent::kSparse)
                claimed += boost::icl::interval<std::int64_t>::right_open(e.lcn, e.lcn + e.clusters);
    ClusterSet used(boost::icl::interval<std::int64_t>::right_open(0, volume.total_clusters));
    used -= volume.free;
    if (claimed == used) return std::nullopt;
    const ClusterSet unclaimed = used - claimed;
    if (!unclaimed.empty()) return "$Bitmap marks " + first_interval(unclaimed) + " used but no runlist holds it";
    return "$Bitmap marks " + first_interval(claimed - used) + " free but a runlist holds it";
}

}  // namespace guestfrag
