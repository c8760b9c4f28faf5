// SPDX-License-Identifier: GPL-2.0-or-later
// Placement orders (docs/planner.md §14): a hand-worked ordered layout, the order every
// strategy leaves streams in on a generated volume, traces, refusals, and an ordered plan
// carried out by apply whose output reads exactly as the plan's estimate predicted.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"
#include "core/image/open_image.hpp"
#include "core/model/paths.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/planner.hpp"
#include "support/fixtures.hpp"
#include "support/hand_volume.hpp"

using namespace guestfrag;

namespace {

using test::r;
using test::stream;

PlanOptions ordered(Strategy strategy, PlacementOrder::Kind kind) {
    PlanOptions o;
    o.strategy = strategy;
    o.order = PlacementOrder{kind, {}};
    return o;
}

VolumeMap volume_of(const std::filesystem::path& image) {
    const auto disk = open_image(image.string());
    const ImageAnalysis a = analyze_image(*disk);
    REQUIRE(a.volumes.size() == 1);
    return a.volumes[0].map;
}

/// How many streams of `sequence` (indices into after.streams) start somewhere other than
/// where the stream before them in the sequence ends, counting only streams the plan may
/// move and that hold clusters.
std::size_t breaks_in(const VolumeMap& after, const std::vector<std::size_t>& sequence) {
    std::size_t breaks = 0;
    std::int64_t end = -1;
    for (const std::size_t i : sequence) {
        const Stream& s = after.streams[i];
        if (s.placement != Placement::Movable || s.allocated_clusters() == 0) continue;
        std::int64_t first = -1;
        std::int64_t last_end = -1;
        for (const Extent& e : s.extents) {
            if (e.lcn < 0) continue;
            if (first < 0) first = e.lcn;
            last_end = e.lcn + e.clusters;
        }
        if (end >= 0 && first != end) ++breaks;
        end = last_end;
    }
    return breaks;
}

}  // namespace

TEST_CASE("optimize --order mft: worked by hand", "[plan][order]") {
    // 0-1 free, A (64) 2-3, C (66) 4-6, B (65) 7-8, 9-19 free. MFT order A, B, C. With no
    // slack the cursor starts at 0: A goes to 0-1, B to 2-3 (after A has left), C already
    // starts at the cursor (4) and stays: 7-19 ends up one free extent. With 8 clusters of
    // slack A and B would stay and C go to 9-11, leaving three free extents: the key
    // (free-space fragmentation first) prefers no slack.
    VolumeMap v = test::empty_volume(20);
    v.free.add(r(0, 2));
    v.free.add(r(9, 20));
    v.streams = {stream(64, {{0, 2, 2}}), stream(65, {{0, 7, 2}}), stream(66, {{0, 4, 3}})};
    const Plan p = make_plan(v, {}, identify(v, "hand.img", 1 << 30),
                             ordered(Strategy::Optimize, PlacementOrder::Kind::Mft));
    CHECK(p.order == "mft");
    REQUIRE(p.moves == std::vector<Move>{{64, "$DATA", 0, 2, 0, 2}, {65, "$DATA", 0, 7, 2, 2}});
    CHECK(p.summary.free_extents_after == 1);
    CHECK(p.summary.largest_free_extent_clusters_after == 13);
}

TEST_CASE("optimize and consolidate --order path: streams end up where a tree walk reads them",
          "[plan][order]") {
    const VolumeMap v = volume_of(test::fragmented_256_image());
    const std::vector<std::size_t> walk = path_order(v);
    const std::size_t breaks_before = breaks_in(v, walk);
    for (const Strategy strategy : {Strategy::Optimize, Strategy::Consolidate, Strategy::Defrag}) {
        INFO(strategy_name(strategy));
        const Plan p =
            make_plan(v, {}, identify(v, "v.img", 1 << 30), ordered(strategy, PlacementOrder::Kind::Path));
        CHECK(p.order == "path");
        const VolumeMap after = apply_plan(v, p);
        const std::size_t breaks_after = breaks_in(after, walk);
        const Plan by_size =
            make_plan(v, {}, identify(v, "v.img", 1 << 30), ordered(strategy, PlacementOrder::Kind::Size));
        // Every stream optimize moves lands right after the one a walk reads before it;
        // consolidate, which moves only some streams, leaves fewer breaks in the walk than
        // placing by size. Defrag moves only fragmented streams, and only where free space
        // stays no worse (docs/planner.md §14): never more breaks, here none fewer.
        const std::size_t breaks_by_size = breaks_in(apply_plan(v, by_size), walk);
        if (strategy == Strategy::Defrag)
            CHECK(breaks_after <= breaks_by_size);
        else
            CHECK(breaks_after < breaks_by_size);
        if (strategy == Strategy::Optimize) {
            CHECK(breaks_after * 20 < breaks_before);
            CHECK(analyze_file_fragmentation(after).fragmented_streams == 0);
            CHECK(p.summary.moved_bytes <=
                  static_cast<std::uint64_t>(v.total_clusters - v.free_clusters()) * v.cluster_size);
        }
        // Free space no worse than before (defrag's rule, consolidate's too).
        if (strategy != Strategy::Optimize) {
            CHECK(analyze_free_space(after).fragmentation_percent <=
                  analyze_free_space(v).fragmentation_percent);
            CHECK(analyze_free_space(after).largest_extent_clusters >=
                  analyze_free_space(v).largest_extent_clusters);
        }
    }
}

TEST_CASE("a trace order lays the traced files out in trace order and reports the paths it cannot find",
          "[plan][order]") {
    const VolumeMap v = volume_of(test::fragmented_256_image());
    // Twenty files with data, in reverse MFT order, and two paths that name nothing.
    std::vector<std::string> paths;
    std::vector<std::size_t> traced;
    for (std::size_t i = v.streams.size(); i-- > 0 && traced.size() < 20;) {
        const Stream& s = v.streams[i];
        if (s.type != static_cast<std::uint32_t>(AttrType::Data) || !s.name.empty() || s.mft_record < 64 ||
            s.placement != Placement::Movable || s.allocated_clusters() == 0)
            continue;
        paths.push_back(v.path_of(s.mft_record));
        traced.push_back(i);
    }
    REQUIRE(traced.size() == 20);
    paths.insert(paths.begin() + 3, "\\no\\such\\file.dll");
    paths.push_back("C:\\Windows\\missing.exe");
    PlanOptions options = ordered(Strategy::Optimize, PlacementOrder::Kind::Trace);
    options.order->trace_source = "boot.txt";
    options.trace_paths = paths;
    const Plan p = make_plan(v, {}, identify(v, "v.img", 1 << 30), options);
    CHECK(p.order == "trace:boot.txt");
    // One region, in trace order: only a barrier inside it (the MFT zone, $MFTMirr and
    // $LogFile in the middle of the volume) may make a traced file start after a gap.
    const VolumeMap after = apply_plan(v, p);
    CHECK(breaks_in(after, traced) <= 1);
    CHECK(breaks_in(v, traced) >= 15);
    REQUIRE_FALSE(p.notes.empty());
    CHECK(p.notes.front() ==
          "the trace names 2 paths that are no file of the volume (first: \\no\\such\\file.dll, "
          "C:\\Windows\\missing.exe); the files it does name are placed in its order");

    // Without its paths the planner cannot place a trace: a caller's bug, never a plan.
    options.trace_paths.reset();
    CHECK_THROWS_MATCHES(
        make_plan(v, {}, identify(v, "v.img", 1 << 30), options), Error,
        Catch::Predicate<Error>([](const Error& e) { return e.kind() == ErrorKind::Internal; }));
}

TEST_CASE("orders: names, defaults and the strategies that take none", "[plan][order]") {
    CHECK(parse_order("size").kind == PlacementOrder::Kind::Size);
    CHECK(parse_order("trace:@layout").trace_source == "@layout");
    CHECK(parse_order("path").text() == "path");
    CHECK_THROWS_AS(parse_order("trace:"), Error);
    CHECK_THROWS_AS(parse_order("name"), Error);
    CHECK(default_order(Strategy::Optimize)->kind == PlacementOrder::Kind::Size);
    CHECK_FALSE(default_order(Strategy::Shrink));
    PlanOptions o;
    o.strategy = Strategy::Shrink;
    o.order = parse_order("trace:@layout");
    CHECK_THROWS_WITH(effective_order(o), Catch::StartsWith("shrink cannot take --order trace:@layout"));
}

TEST_CASE("plan --order: the CLI, the plan file and the refusals", "[plan][order][cli]") {
    const std::string image = test::fragmented_256_image().string();
    const auto r = test::run_cli({"plan", image, "--strategy", "optimize", "--order", "path", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["order"] == "path");
    // The plan reads back with its order, and plan --check accepts it.
    const auto dir = test::scratch_dir() / "plan-order";
    std::filesystem::create_directories(dir);
    const auto file = (dir / "path.json").string();
    std::ofstream(file) << r.out;
    CHECK(test::run_cli({"plan", image, "--check", file}).status == 0);

    const auto shrink = test::run_cli({"plan", image, "--strategy", "shrink", "--order", "trace:@layout"});
    CHECK(shrink.status == 1);
    CHECK(shrink.err.find("shrink cannot take --order trace:@layout") != std::string::npos);
    CHECK(test::run_cli({"plan", image, "--order", "alphabetical"}).status == 1);
    // A trace that cannot be read is bad input, named.
    const auto missing = test::run_cli({"plan", image, "--order", "trace:" + (dir / "none.txt").string()});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("none.txt") != std::string::npos);
}

TEST_CASE("an ordered plan carried out reads as its estimate predicted", "[plan][order][apply]") {
    test::require_tools({"qemu-img"});
    const std::string image = test::fragmented_256_image().string();
    const test::WorkDir dir("plan-order-apply");
    const std::string plan = (dir / "path.json").string();
    const std::string out = (dir / "out.raw").string();
    REQUIRE(test::run_cli({"plan", image, "--strategy", "optimize", "--order", "path", "-o", plan}).status ==
            0);
    const auto predicted =
        test::run_cli({"estimate", image, "--plan", plan, "--workload", "scan:path", "--json"});
    REQUIRE(predicted.status == 0);
    const auto applied = test::run_cli({"apply", image, "--plan", plan, "-o", out});
    INFO(applied.err);
    REQUIRE(applied.status == 0);
    const auto measured = test::run_cli({"estimate", out, "--workload", "scan:path", "--json"});
    REQUIRE(measured.status == 0);
    const auto after = nlohmann::json::parse(predicted.out)["volumes"][0]["after"];
    const auto now = nlohmann::json::parse(measured.out)["volumes"][0]["before"];
    for (const char* key : {"ios", "bytes", "sequential_percent", "device_seconds", "histograms"}) {
        INFO(key);
        CHECK(after[key] == now[key]);
    }
    // And the order paid: fewer seconds on every device than before the plan.
    const auto before = nlohmann::json::parse(predicted.out)["volumes"][0]["before"];
    for (const char* device : {"hdd", "ssd", "array"})
        CHECK(after["device_seconds"][device].get<double>() < before["device_seconds"][device].get<double>());
}
