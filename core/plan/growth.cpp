// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plan/growth.hpp"

#include <algorithm>

#include "core/plan/intervals.hpp"

namespace guestfrag {

namespace {

using Bytes = ByteSet::interval_type;

std::uint64_t round_down(std::uint64_t value, std::uint64_t granule) { return value / granule * granule; }
std::uint64_t round_up(std::uint64_t value, std::uint64_t granule) {
    return (value + granule - 1) / granule * granule;
}

}  // namespace

ByteSet whole_granules_touching(const ByteSet& bytes, std::uint64_t granule) {
    if (granule <= 1) return bytes;
    ByteSet out;
    for (const auto& i : bytes) {
        const std::uint64_t lo = round_down(boost::icl::first(i), granule);
        const std::uint64_t hi = round_up(boost::icl::last_next(i), granule);
        out.add(out.end(), Bytes::right_open(lo, hi));
    }
    return out;
}

ByteSet whole_granules_within(const ByteSet& bytes, std::uint64_t granule) {
    if (granule <= 1) return bytes;
    ByteSet out;
    for (const auto& i : bytes) {
        const std::uint64_t lo = round_up(boost::icl::first(i), granule);
        const std::uint64_t hi = round_down(boost::icl::last_next(i), granule);
        if (lo < hi) out.add(out.end(), Bytes::right_open(lo, hi));
    }
    return out;
}

GrowthModel::GrowthModel(const VolumeMap& volume, const std::vector<Layer>& layers, std::uint64_t granule)
    : partition_offset_(volume.partition_offset),
      cluster_size_(volume.cluster_size),
      total_clusters_(volume.total_clusters),
      granule_(granule) {
    if (granule_ == 0) granule_ = layers.empty() ? 0 : layers.front().growth_granule();
    if (granule_ == 0) granule_ = std::max<std::uint64_t>(cluster_size_, 1);
    if (!layers.empty()) {
        top_raw_ = layers.front().allocated;
        top_ = whole_granules_touching(top_raw_, granule_);
    }
    ByteSet parents;
    for (std::size_t i = 1; i < layers.size(); ++i) parents += layers[i].allocated;
    parents_ = whole_granules_touching(parents, granule_);
}

Bytes GrowthModel::disk_bytes(std::int64_t lcn, std::int64_t clusters) const {
    const std::uint64_t lo = partition_offset_ + static_cast<std::uint64_t>(lcn) * cluster_size_;
    return Bytes::right_open(lo, lo + static_cast<std::uint64_t>(clusters) * cluster_size_);
}

GrowthFigures GrowthModel::would_add(std::int64_t lcn, std::int64_t clusters) const {
    GrowthFigures out;
    if (clusters <= 0) return out;
    const Bytes bytes = disk_bytes(lcn, clusters);
    const Bytes range = Bytes::right_open(round_down(boost::icl::first(bytes), granule_),
                                          round_up(boost::icl::last_next(bytes), granule_));
    // Writing where the top layer already has the data costs nothing: the common case,
    // answered without building any set.
    if (boost::icl::contains(top_, range)) return out;
    // Every set is cut down to `range` first: the big sets are never walked whole.
    ByteSet fresh(range);
    written_.for_each_in(boost::icl::first(range), boost::icl::last_next(range),
                         [&](std::uint64_t a, std::uint64_t b) { fresh.subtract(Bytes::right_open(a, b)); });
    fresh -= clip(top_, range);
    const std::uint64_t not_in_top = boost::icl::length(fresh);
    const std::uint64_t in_parent = boost::icl::length(fresh & clip(parents_, range));
    out.clone_delta_growth_bytes = in_parent;
    out.thin_growth_bytes = not_in_top - in_parent;
    return out;
}

void GrowthModel::write(std::int64_t lcn, std::int64_t clusters) {
    if (clusters <= 0) return;
    const GrowthFigures add = would_add(lcn, clusters);
    total_.thin_growth_bytes += add.thin_growth_bytes;
    total_.clone_delta_growth_bytes += add.clone_delta_growth_bytes;
    const Bytes bytes = disk_bytes(lcn, clusters);
    written_.add(round_down(boost::icl::first(bytes), granule_),
                 round_up(boost::icl::last_next(bytes), granule_));
}

ClusterSet GrowthModel::clusters_in_top_granules() const {
    ClusterSet out;
    if (cluster_size_ == 0) return out;
    const std::uint64_t po = partition_offset_;
    const std::uint64_t cs = cluster_size_;
    const auto total = static_cast<std::uint64_t>(std::max<std::int64_t>(total_clusters_, 0));
    for (const auto& i : top_) {
        const std::uint64_t a = boost::icl::first(i);
        const std::uint64_t b = boost::icl::last_next(i);
        if (b <= po) continue;
        const std::uint64_t lo = a <= po ? 0 : (a - po + cs - 1) / cs;
        const std::uint64_t hi = std::min((b - po) / cs, total);
        if (lo < hi) out.add(out.end(), cluster_range(static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi)));
    }
    return out;
}

ByteSet GrowthModel::top_allocation_after() const { return top_raw_ + written_.to_set<ByteSet>(); }

GrowthFigures plan_growth(const VolumeMap& volume, const std::vector<Layer>& layers, const Plan& plan,
                          std::uint64_t granule) {
    GrowthModel model(volume, layers, granule);
    for (const Move& m : plan.moves) model.write(m.to_lcn, m.clusters);
    return model.total();
}

std::uint64_t reclaimable_bytes(const VolumeMap& volume, const ClusterSet& free, const ByteSet& top_allocated,
                                std::uint64_t granule) {
    const std::uint64_t po = volume.partition_offset;
    const std::uint64_t cs = volume.cluster_size;
    ByteSet free_bytes;
    for (const auto& f : free)
        free_bytes.add(free_bytes.end(), Bytes::right_open(po + static_cast<std::uint64_t>(first_cluster(f)) * cs,
                                                           po + static_cast<std::uint64_t>(end_cluster(f)) * cs));
    const ByteSet whole_free = whole_granules_within(free_bytes, granule);
    return boost::icl::length(top_allocated & whole_free);
}

}  // namespace guestfrag
