// SPDX-License-Identifier: GPL-2.0-or-later
#include <catch2/catch.hpp>

#include "analyzers/layer_usage.hpp"

using namespace guestfrag;

TEST_CASE("layer usage splits allocated granules into NTFS-used, NTFS-free and reclaimable", "[analyzers][layers]") {
    // A 4 MiB volume at disk offset 1 MiB with 4 KiB clusters; a layer with 64 KiB granules.
    VolumeMap v;
    v.partition_offset = 1 << 20;
    v.cluster_size = 4096;
    v.total_clusters = 1024;
    v.free.add(ClusterSet::interval_type::right_open(0, 16));     // bytes 1M+0   .. 1M+64K
    v.free.add(ClusterSet::interval_type::right_open(100, 116));  // bytes 1M+400K.. 1M+464K
    v.free.add(ClusterSet::interval_type::right_open(300, 301));

    Layer layer;
    layer.granule_size = 64 << 10;
    const std::uint64_t K = 1024, M = 1 << 20;
    layer.allocated.add(ByteSet::interval_type::right_open(0, 64 * K));                // MBR area: outside the volume
    layer.allocated.add(ByteSet::interval_type::right_open(M, M + 128 * K));           // granules 0-1 of the volume
    layer.allocated.add(ByteSet::interval_type::right_open(M + 384 * K, M + 512 * K)); // granules 6-7

    const auto usage = analyze_layer_usage(v, {layer});
    REQUIRE(usage.size() == 1);
    // In the volume: 128K + 128K allocated.
    CHECK(usage[0].allocated_bytes == 256 * K);
    // NTFS-free inside them: clusters 0-15 (64K) and 100-115 (64K).
    CHECK(usage[0].ntfs_free_bytes == 128 * K);
    CHECK(usage[0].ntfs_used_bytes == 128 * K);
    // Whole free granules: only granule 0 (clusters 0-15); clusters 100-115 straddle
    // granules 6 (from 400K) and 7 (to 464K), so neither is wholly free.
    CHECK(usage[0].reclaimable_bytes == 64 * K);
}
