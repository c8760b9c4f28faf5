// SPDX-License-Identifier: GPL-2.0-or-later
// The use cases of pipeline/pipeline.hpp give what the core's steps give one by one.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/model/free_space.hpp"
#include "core/plan/apply.hpp"
#include "pipeline/pipeline.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;

TEST_CASE("pipeline: plan, adopt, impact and estimate of one volume", "[pipeline][plan][estimate][impact]") {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 300;
    o.seed = 21;
    const OpenedImage opened = open_and_analyze(test::generated_image("pipeline", o).string());
    REQUIRE(opened.analysis->volumes.size() == 1);
    const VolumeMap& before = opened.analysis->volumes.front().map;

    PlanOptions options;
    options.strategy = Strategy::Optimize;
    const PlannedVolume planned = plan_volume(opened, 0, options);
    CHECK(planned.volume == 0);
    REQUIRE(!planned.plan.moves.empty());

    // The summary carries its free-space figures: nobody fills them in afterwards.
    const PlanSummary& s = planned.plan.summary;
    REQUIRE(s.free_space_fragmentation_percent_before);
    REQUIRE(s.free_space_fragmentation_percent_after);
    CHECK(*s.free_space_fragmentation_percent_before == opened.analysis->volumes.front().free_space.fragmentation_percent);
    CHECK(*s.free_space_fragmentation_percent_after == analyze_free_space(*planned.after).fragmentation_percent);

    // A saved plan taken back gives the same plan, summary and after-state.
    const PlannedVolume adopted = adopt_plan(opened, 0, planned.plan);
    CHECK(adopted.plan.summary == s);
    CHECK(adopted.after->free == planned.after->free);

    // A plan for a changed volume is refused before any use.
    Plan changed = planned.plan;
    ++changed.identity.allocation_digest;
    CHECK_THROWS_AS(adopt_plan(opened, 0, changed), Error);

    // The impact of the planned volume, from its after-map and summary, is what the core
    // gives when it applies and summarises the plan itself: at the plan's granule (the
    // summary taken over) and at another (summarised again), also once a front end let the
    // after-map go (the plan is then applied again).
    const PlannedVolume let_go = [&] {
        PlannedVolume copy = planned;
        copy.after.reset();
        return copy;
    }();
    for (const PlannedVolume* p : {&planned, &let_go}) {
        for (const std::uint64_t granule : {s.granule_size, std::uint64_t{1} << 20}) {
            ImpactOptions io;
            io.granule = granule;
            const Impact impact = plan_impact(opened, *p, io);
            const Impact core = assess_impact(*opened.image, opened.analysis->table, before, planned.plan, io);
            CHECK(impact.partition == before.partition);
            CHECK(impact.granule_size == granule);
            CHECK(impact.moved_bytes == core.moved_bytes);
            CHECK(impact.growth.thin_growth_bytes == core.growth.thin_growth_bytes);
            CHECK(impact.growth.clone_delta_growth_bytes == core.growth.clone_delta_growth_bytes);
            CHECK(impact.reclaimable_bytes_before == core.reclaimable_bytes_before);
            CHECK(impact.reclaimable_bytes_after == core.reclaimable_bytes_after);
            CHECK(impact.host == core.host);
            CHECK(impact.warnings == core.warnings);
        }
    }

    const VolumeEstimate e = estimate_volume(opened, 0, parse_workload("scan"), IoShape{}, &planned);
    CHECK(e.partition == before.partition);
    const PreparedWorkload w = prepare_workload(parse_workload("scan"), IoShape{}, *opened.image, before);
    CHECK(e.before.stats.ios == estimate_workload(before, w).stats.ios);
    REQUIRE(e.after);
    CHECK(e.after->stats.ios == estimate_workload(apply_plan(before, planned.plan), w).stats.ios);
    CHECK(!estimate_volume(opened, 0, parse_workload("scan"), IoShape{}, nullptr).after);
}
