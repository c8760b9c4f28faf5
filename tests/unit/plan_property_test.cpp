// SPDX-License-Identifier: GPL-2.0-or-later
// Property: optimize keeps its promise (docs/planner.md §12) in every order, on drawn
// volumes (test::drawn_volume: 512 B to 64 KiB clusters, many-fragment files, nearly empty to
// nearly full) and on every real volume in tests/data: no free-space figure worse than
// before; no plan for nothing (an empty plan says why in a note); no move of a stream onto
// itself; every stream moved twice counted in the plan's note; and the data moved
// the sum of the moves. The suite runs a few drawn cases; bench/property.sh many:
//   GUESTFRAG_PROPERTY_CASES  drawn cases (default 3)
//   GUESTFRAG_PROPERTY_SEED   first case's seed (default 1)
//   GUESTFRAG_PROPERTY_RUNS   most runs of a pair file (default 6000)
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>

#include "app/mkimage/mkimage.hpp"
#include "core/plan/planner.hpp"
#include "pipeline/pipeline.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

/// What the plan's note says it moved twice: streams and bytes (0, 0 without the note).
std::pair<std::uint64_t, std::uint64_t> detours_noted(const Plan& plan) {
    static const std::regex note(R"(^(\d+) streams \((\d+) bytes\) moved twice)");
    for (const std::string& n : plan.notes)
        if (std::smatch m; std::regex_search(n, m, note)) return {std::stoull(m[1]), std::stoull(m[2])};
    return {0, 0};
}

void check_optimize(const OpenedImage& opened, std::size_t volume, const char* order) {
    INFO("optimize --order " << order << ", volume " << volume);
    PlanOptions options;
    options.strategy = Strategy::Optimize;
    options.order = parse_order(order);
    const PlannedVolume planned = plan_volume(opened, volume, options);
    const Plan& plan = planned.plan;
    const PlanSummary& s = plan.summary;
    const std::uint64_t cluster = opened.analysis->volumes.at(volume).map.cluster_size;

    CHECK(s.free_extents_after <= s.free_extents_before);
    CHECK(s.largest_free_extent_clusters_after >= s.largest_free_extent_clusters_before);
    CHECK(s.free_space_fragmentation_percent_after <= s.free_space_fragmentation_percent_before);
    if (plan.moves.empty()) {
        CHECK_FALSE(plan.notes.empty());  // why nothing
        return;
    }
    CHECK((s.fragmented_streams_after < s.fragmented_streams_before ||
           s.free_extents_after < s.free_extents_before ||
           s.largest_free_extent_clusters_after > s.largest_free_extent_clusters_before ||
           s.free_space_fragmentation_percent_after < s.free_space_fragmentation_percent_before));

    std::uint64_t moved = 0;
    std::map<std::pair<std::uint64_t, std::string>, ClusterSet> vcns;  // each stream's VCNs moved
    std::uint64_t twice_streams = 0;
    std::uint64_t twice_bytes = 0;
    std::set<std::pair<std::uint64_t, std::string>> twice;
    for (const Move& m : plan.moves) {
        CHECK(m.from_lcn != m.to_lcn);
        moved += static_cast<std::uint64_t>(m.clusters) * cluster;
        ClusterSet& seen = vcns[{m.mft_record, std::string(m.stream)}];
        const ClusterSet range(boost::icl::interval<std::int64_t>::right_open(m.vcn, m.vcn + m.clusters));
        const ClusterSet again = seen & range;
        if (!again.empty()) {
            twice_bytes += static_cast<std::uint64_t>(boost::icl::length(again)) * cluster;
            if (twice.insert({m.mft_record, std::string(m.stream)}).second) ++twice_streams;
        }
        seen += range;
    }
    CHECK(s.moved_bytes == moved);
    const auto [noted_streams, noted_bytes] = detours_noted(plan);
    CHECK(twice_streams == noted_streams);
    CHECK(twice_bytes == noted_bytes);
}

void check_every_order(const fs::path& image) {
    const OpenedImage opened = open_and_analyze(image.string());
    for (std::size_t v = 0; v < opened.analysis->volumes.size(); ++v)
        for (const char* order : {"mft", "size", "path"}) check_optimize(opened, v, order);
}

}  // namespace

TEST_CASE("optimize keeps its promise in every order on drawn volumes", "[plan][optimize][property]") {
    test::for_each_drawn_volume("plan-property", 3, [](const MkImageOptions& volume, const test::WorkDir&) {
        INFO(test::mkimage_line(volume));
        check_every_order(volume.output);
    });
}

TEST_CASE("optimize keeps its promise in every order on the real volumes in tests/data", "[plan][optimize]") {
    for (const char* name : {"dftt-10-ntfs-disk.dd.xz", "hyperv-dynamic.vhdx.gz", "hyperv-fixed.vhdx.gz",
                             "windows_volume.qcow2"}) {
        INFO(name);
        check_every_order(test::testdata(name));
    }
}
