// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"
#include "core/plan/intervals.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// What writing a plan's destinations costs a layered disk (docs/design.md §5; formulas in
/// docs/planner.md §3). Bytes, multiples of the granule.
struct GrowthFigures {
    /// Granules written that no layer has allocated: the thin disk (top layer) grows.
    std::uint64_t thin_growth_bytes = 0;
    /// Granules written that only a parent layer (depth ≥ 1) has allocated: each is copied
    /// whole into the top layer on first write.
    std::uint64_t clone_delta_growth_bytes = 0;

    friend bool operator==(const GrowthFigures&, const GrowthFigures&) = default;
};

/// `bytes` widened to whole granules of `granule` bytes (granule 0 or 1: unchanged).
/// O(intervals).
[[nodiscard]] ByteSet whole_granules_touching(const ByteSet& bytes, std::uint64_t granule);

/// The granules of `granule` bytes that lie wholly inside `bytes` (granule 0 or 1: `bytes`).
/// O(intervals).
[[nodiscard]] ByteSet whole_granules_within(const ByteSet& bytes, std::uint64_t granule);

/// The growth model of one volume of a layered disk, at one granule size, fed one write at a
/// time so the planner can ask what a destination would cost before choosing it. A granule
/// is "allocated in a layer" when any byte of it is (the layer stores it in its own units;
/// a write into it costs nothing more). Granule 0 means the top layer's granule, or the
/// cluster size when there are no layers. Copies what it needs; O(layer intervals) to build.
class GrowthModel {
public:
    GrowthModel(const VolumeMap& volume, const std::vector<Layer>& layers, std::uint64_t granule = 0);

    [[nodiscard]] std::uint64_t granule() const { return granule_; }
    /// Virtual-disk bytes of clusters [lcn, lcn + clusters) of the volume.
    [[nodiscard]] ByteSet::interval_type disk_bytes(std::int64_t lcn, std::int64_t clusters) const;
    /// What writing [lcn, lcn + clusters) would add to total(). O(log intervals).
    [[nodiscard]] GrowthFigures would_add(std::int64_t lcn, std::int64_t clusters) const;
    /// Records the write. O(log intervals).
    void write(std::int64_t lcn, std::int64_t clusters);
    [[nodiscard]] const GrowthFigures& total() const { return total_; }

    /// Volume clusters whose every byte lies in a granule the top layer has allocated:
    /// writing only there grows nothing (thin-safe's destinations). O(top intervals).
    [[nodiscard]] ClusterSet clusters_in_top_granules() const;
    /// The top layer's allocation after the writes so far: its allocated bytes plus every
    /// granule written.
    [[nodiscard]] ByteSet top_allocation_after() const;
    /// Whether the top layer has any byte of `bytes` allocated. O(log intervals).
    [[nodiscard]] bool top_allocated(const ByteSet::interval_type& bytes) const {
        return boost::icl::intersects(top_raw_, bytes);
    }
    /// The top layer's allocated bytes as the image has them (empty without layers).
    [[nodiscard]] const ByteSet& top_allocation() const { return top_raw_; }

private:
    std::uint64_t partition_offset_ = 0;
    std::uint64_t cluster_size_ = 0;
    std::int64_t total_clusters_ = 0;
    std::uint64_t granule_ = 0;
    ByteSet top_raw_;                    ///< top layer's allocated bytes
    ByteSet top_;                        ///< granules the top layer has allocated
    ByteSet parents_;                    ///< granules some parent layer has allocated
    RangeUnion<std::uint64_t> written_;  ///< granules written so far, a write at a time
    GrowthFigures total_;
};

/// Thin and clone delta growth of `plan` on `volume` (a pure function of its destinations:
/// each distinct granule written counts once). O(moves · log intervals + layer intervals).
[[nodiscard]] GrowthFigures plan_growth(const VolumeMap& volume, const std::vector<Layer>& layers, const Plan& plan,
                                        std::uint64_t granule = 0);

/// Bytes of `top_allocated` lying in granules of `granule` bytes that are wholly inside the
/// volume's free clusters `free` (what TRIM/UNMAP or compaction would hand back; the same
/// formula as analyze_layer_usage's reclaimable_bytes). O(free extents + allocated intervals).
[[nodiscard]] std::uint64_t reclaimable_bytes(const VolumeMap& volume, const ClusterSet& free,
                                              const ByteSet& top_allocated, std::uint64_t granule);

}  // namespace guestfrag
