// SPDX-License-Identifier: GPL-2.0-or-later
// The plan's own IO (docs/impact.md §10) and the written map a workload after the plan
// starts from (docs/estimate.md §8.1), on a hand-built volume whose every number is worked
// out in the comments; then `impact --json` and `report --json` on a generated image against
// the core's figures.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/estimate/estimate.hpp"
#include "core/estimate/workload.hpp"
#include "core/estimate/written_map.hpp"
#include "core/impact/plan_writes.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"
#include "support/fixtures.hpp"
#include "support/hand_volume.hpp"
#include "support/memory_image.hpp"
#include "support/provisioned.hpp"

using namespace guestfrag;
using Json = nlohmann::json;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
/// The zeroing block of the fixture: 64 KiB = 16 clusters of 4 KiB.
constexpr std::uint64_t kBlock = 64 * KiB;

ByteSet::interval_type bytes(std::uint64_t lo, std::uint64_t hi) {
    return ByteSet::interval_type::right_open(lo, hi);
}

/// 1000 clusters of 4 KiB at disk byte 1 MiB (cluster c = byte 1 MiB + 4096c = sector
/// 2048 + 8c, in zeroing block 16 + ⌊c / 16⌋). File 64 at clusters 10-11 and 40-42, file 65
/// at 60; free [100, 1000).
VolumeMap volume() {
    VolumeMap v = test::empty_volume(1000);
    v.partition_offset = MiB;
    v.free.add(test::r(100, 1000));
    v.streams = {test::stream(64, {{0, 10, 2}, {2, 40, 3}}), test::stream(65, {{0, 60, 1}})};
    return v;
}

/// Move 0: file 64's first two clusters to 143-144, across blocks 24 and 25 (never written).
/// Move 1: its other three to 113-115, inside block 23 (the layer already stores it).
/// Move 2: file 65's cluster to 150, in block 25 (move 0 wrote it).
Plan plan() {
    Plan p;
    p.strategy = "defrag";
    p.moves = {{64, "$DATA", 0, 10, 143, 2}, {64, "$DATA", 2, 40, 113, 3}, {65, "$DATA", 0, 60, 150, 1}};
    return p;
}

/// The top layer stores disk bytes [0, 1 MiB + 128 KiB) (blocks 0-17) and block 23
/// (clusters 112-127): thin, 64 KiB zeroing blocks.
Layer top_layer() {
    Layer top;
    top.path = "thin";
    top.format = ImageFormat::Raw;
    top.granule_size = 4096;
    top.allocated.add(bytes(0, MiB + 128 * KiB));
    top.allocated.add(bytes(23 * kBlock, 24 * kBlock));
    top.provisioning = {Provisioning::Thin, kBlock, false, "test"};
    return top;
}

Json run_json(const std::vector<std::string>& args) {
    const auto r = test::run_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return Json::parse(r.out);
}

/// The plan's IOs, all of them.
std::vector<Io> plan_ios(const VolumeMap& volume, const Plan& plan, std::uint64_t max_io = kDefaultMaxIo) {
    std::vector<Io> out;
    for_each_plan_io(volume, plan, max_io, [&](const Io& io) { out.push_back(io); });
    return out;
}

}  // namespace

TEST_CASE("plan writes: each move read then written, in plan order, in blocks of max_io", "[plan-writes]") {
    // Move 0: read clusters 10-11 (sector 2048 + 80), write 143-144 (2048 + 1144); move 1:
    // 40-42 (2368) to 113-115 (2952); move 2: 60 (2528) to 150 (3248).
    CHECK(plan_ios(volume(), plan()) == std::vector<Io>{{2128, 8192, false},
                                                        {3192, 8192, true},
                                                        {2368, 12288, false},
                                                        {2952, 12288, true},
                                                        {2528, 4096, false},
                                                        {3248, 4096, true}});
    // With 8 KiB IOs move 1's 12 KiB is 8 KiB read, 8 KiB written, then the last 4 KiB each.
    Plan one;
    one.moves = {plan().moves[1]};
    CHECK(plan_ios(volume(), one, 8 * KiB) ==
          std::vector<Io>{{2368, 8192, false}, {2952, 8192, true}, {2384, 4096, false}, {2968, 4096, true}});
    // 257 clusters (1 MiB + 4 KiB) from 0 to 300 at the default 1 MiB: the mover's copy blocks.
    Plan big;
    big.moves = {{70, "$DATA", 0, 0, 300, 257}};
    CHECK(plan_ios(volume(), big) ==
          std::vector<Io>{{2048, MiB, false}, {4448, MiB, true}, {4096, 4096, false}, {6496, 4096, true}});
    // Nothing outside the volume, no IO size that is not whole sectors.
    big.moves = {{70, "$DATA", 0, 0, 900, 257}};
    CHECK_THROWS_AS(plan_ios(volume(), big), Error);
    CHECK_THROWS_AS(plan_ios(volume(), plan(), 1000), Error);
}

TEST_CASE("plan writes: first writes, and bytes into written and into new blocks", "[plan-writes]") {
    const Layer top = top_layer();
    const WrittenMap written = WrittenMap::from_layer(top, kBlock);
    const PlanWrites w = assess_plan_writes(volume(), plan(), written, top.provisioning);
    const IoStats& s = w.stats;
    CHECK(s.ios == 6);
    CHECK(s.writes == 3);
    CHECK(s.bytes == 49152);
    CHECK(s.written_bytes == 24576);
    CHECK(s.zero_block == kBlock);
    // Move 0 touches blocks 24 and 25, both never written: 2 first writes, its 8 KiB into new
    // blocks. Move 1 lands in block 23 (stored by the layer) and move 2 in block 25 (move 0
    // wrote it): nothing more to pay, 12 KiB + 4 KiB into written blocks.
    CHECK(s.first_writes == 2);
    CHECK(w.into_new_bytes == 8192);
    CHECK(w.into_written_bytes == 16384);
    CHECK(w.provisioning == top.provisioning);

    // Eager pays no first write; lazy zeroes the 2 blocks, thin also allocates them.
    CHECK(test::provisioned(s, Provisioning::Eager).first_writes == 0);
    CHECK(test::provisioned(s, Provisioning::Lazy).first_writes == 2);
    CHECK(test::provisioned(s, Provisioning::Thin).first_writes == 2);
    // SSD (docs/estimate.md §8.2): reads 3 · 80 µs + 24576 B / 500 MB/s, writes 3 · 40 µs +
    // 24576 B / 450 MB/s: eager 463.765 µs; lazy + 2 · 65536 B / 450 MB/s = 755.036 µs; thin
    // + 2 · 0.1 ms = 955.036 µs.
    const double eager = 3 * 80e-6 + 24576 / 500e6 + 3 * 40e-6 + 24576 / 450e6;
    CHECK(eager == Approx(463.765e-6).epsilon(1e-5));
    CHECK(test::provisioned(s, Provisioning::Eager).device_seconds.ssd == Approx(eager));
    CHECK(test::provisioned(s, Provisioning::Lazy).device_seconds.ssd == Approx(eager + 2 * 65536 / 450e6));
    CHECK(test::provisioned(s, Provisioning::Thin).device_seconds.ssd ==
          Approx(eager + 2 * 65536 / 450e6 + 2 * 0.1e-3));
    CHECK(test::provisioned(s, Provisioning::Thin).device_seconds.ssd == Approx(955.036e-6).epsilon(1e-5));
    for (double DeviceSeconds::*model : {&DeviceSeconds::hdd, &DeviceSeconds::ssd, &DeviceSeconds::array}) {
        CHECK(test::provisioned(s, Provisioning::Thin).device_seconds.*model >
              test::provisioned(s, Provisioning::Lazy).device_seconds.*model);
        CHECK(test::provisioned(s, Provisioning::Lazy).device_seconds.*model >
              test::provisioned(s, Provisioning::Eager).device_seconds.*model);
        CHECK(test::provisioned(s, Provisioning::Eager).device_seconds.*model == s.device_seconds.*model);
    }

    // On a fully stored layer every destination block is written already.
    Layer full = top;
    full.allocated.add(bytes(0, 8 * MiB));
    const PlanWrites f =
        assess_plan_writes(volume(), plan(), WrittenMap::from_layer(full, kBlock), top.provisioning);
    CHECK(f.stats.first_writes == 0);
    CHECK(f.into_written_bytes == 24576);
    CHECK(f.into_new_bytes == 0);
}

TEST_CASE("plan writes: the written map after the plan", "[plan-writes]") {
    const WrittenMap before = WrittenMap::from_layer(top_layer(), kBlock);
    CHECK(before.written_blocks() == 19);  // blocks 0-17 and 23
    const WrittenMap after = written_after_plan(before, volume(), plan());
    CHECK(after.written_blocks() == 21);  // and 24, 25
    CHECK(after.written(24));
    CHECK(after.written(25));
    CHECK_FALSE(after.written(22));
    CHECK_FALSE(before.written(24));  // the map given is not changed
}

TEST_CASE("plan writes: a workload after the plan pays no first write where the plan wrote",
          "[plan-writes][estimate][pipeline]") {
    // An image in memory: 8 MiB disk, the top layer above, the hand-built volume analysed.
    auto analysis = std::make_shared<ImageAnalysis>();
    analysis->volumes.push_back({volume(), {}, {}, {}});
    const OpenedImage opened{std::make_shared<const test::MemoryImage>(std::vector<std::byte>(8 * MiB),
                                                                       std::vector<Layer>{top_layer()}),
                             analysis};
    const Plan p = plan();
    const PlannedVolume planned{0, p, std::make_shared<const VolumeMap>(apply_plan(volume(), p))};
    // Four 64 KiB writes at disk bytes 1408 KiB … 1664 KiB: blocks 22, 23, 24 and 25.
    const Workload fio = parse_workload("fio:rw=write,bs=64k,offset=1408k,size=256k");
    const VolumeEstimate e = estimate_volume(opened, 0, fio, IoShape{}, &planned);
    CHECK(e.provisioning.zero_block == kBlock);
    CHECK(e.before.stats.writes == 4);
    // Before: only block 23 is stored, so 22, 24 and 25 are first writes.
    CHECK(e.before.stats.first_writes == 3);
    REQUIRE(e.after);
    CHECK(e.after->stats.writes == 4);
    // After: the plan wrote 24 and 25; only 22 is left.
    CHECK(e.after->stats.first_writes == 1);
    CHECK(test::provisioned(e.after->stats, Provisioning::Thin).device_seconds.ssd <
          test::provisioned(e.before.stats, Provisioning::Thin).device_seconds.ssd);
    // Eager pays nothing either way; the IOs are the same.
    CHECK(test::provisioned(e.after->stats, Provisioning::Eager).device_seconds.ssd ==
          Approx(test::provisioned(e.before.stats, Provisioning::Eager).device_seconds.ssd));
}

TEST_CASE("plan writes: impact --json and report --json carry the core's figures",
          "[plan-writes][cli][impact]") {
    const test::WorkDir dir("plan_writes_cli");
    const std::string image = test::small_cli_image().string();
    const std::string plan_path = (dir / "plan.json").string();
    // optimize: a plan that writes into blocks never written before (consolidate's no-worse
    // rule leaves this small volume a plan that writes only over old data).
    run_json({"plan", image, "--strategy", "optimize", "--order", "mft", "-o", plan_path, "--json"});
    const Json doc = run_json({"impact", image, "--plan", plan_path, "--json"});
    const Json& j = doc["figures"]["plan_writes"];

    const OpenedImage opened = open_and_analyze(image);
    const Plan p = read_plan(plan_path);
    REQUIRE(!p.moves.empty());
    const Impact impact = plan_impact(opened, adopt_plan(opened, 0, p));
    const PlanWrites& w = impact.plan_writes;
    CHECK(j["max_io"] == kDefaultMaxIo);
    CHECK(j["provisioning"]["type"] == std::string(provisioning_name(w.provisioning.type)));
    CHECK(j["provisioning"]["zero_block"] == w.provisioning.zero_block);
    CHECK(j["ios"] == w.stats.ios);
    CHECK(j["bytes"] == w.stats.bytes);
    CHECK(j["reads"] == w.stats.ios - w.stats.writes);
    CHECK(j["writes"] == w.stats.writes);
    CHECK(j["written_bytes"] == w.stats.written_bytes);
    CHECK(j["zero_block"] == w.stats.zero_block);
    CHECK(j["first_writes"] == w.stats.first_writes);
    CHECK(j["into_written_bytes"] == w.into_written_bytes);
    CHECK(j["into_new_bytes"] == w.into_new_bytes);
    REQUIRE(j["provisioned"].size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        const ProvisionedSeconds& ps = w.stats.provisioned[i];
        CHECK(j["provisioned"][i]["type"] == std::string(provisioning_name(ps.type)));
        CHECK(j["provisioned"][i]["first_writes"] == ps.first_writes);
        CHECK(j["provisioned"][i]["models"]["hdd"]["device_seconds"].get<double>() ==
              Approx(ps.device_seconds.hdd));
        CHECK(j["provisioned"][i]["models"]["ssd"]["device_seconds"].get<double>() ==
              Approx(ps.device_seconds.ssd));
        CHECK(j["provisioned"][i]["models"]["array"]["device_seconds"].get<double>() ==
              Approx(ps.device_seconds.array));
    }
    // Every moved byte is read once and written once; the written ones land somewhere.
    const std::uint64_t moved = doc["figures"]["moved_bytes"];
    CHECK(w.stats.written_bytes == moved);
    CHECK(w.stats.bytes == 2 * moved);
    CHECK(w.into_written_bytes + w.into_new_bytes == moved);
    CHECK(w.stats.provisioned[0].first_writes == 0);

    // The options reach the figures: eager at 4 KiB blocks.
    const Json eager = run_json(
        {"impact", image, "--plan", plan_path, "--json", "--provisioning", "eager", "--zero-block", "4K"});
    CHECK(eager["figures"]["plan_writes"]["provisioning"]["type"] == "eager");
    CHECK(eager["figures"]["plan_writes"]["zero_block"] == 4096);

    // A job writing every byte of the 32 MiB disk pays once for every block not yet
    // written: after the plan, exactly the plan's first writes fewer (docs/estimate.md §8.1).
    const Json estimate = run_json(
        {"estimate", image, "--plan", plan_path, "--json", "--workload", "fio:rw=write,bs=1m,size=32m"});
    const Json& v = estimate["volumes"][0];
    CHECK(v["provisioning"]["zero_block"] == w.stats.zero_block);
    REQUIRE(w.stats.first_writes > 0);
    CHECK(v["after"]["first_writes"].get<std::uint64_t>() ==
          v["before"]["first_writes"].get<std::uint64_t>() - w.stats.first_writes);

    // Bad storage options: usage errors (exit 1), a layer the chain lacks (exit 2).
    CHECK(test::run_cli({"impact", image, "--plan", plan_path, "--preset", "fast"}).status == 1);
    CHECK(test::run_cli({"impact", image, "--plan", plan_path, "--zero-block", "1000"}).status == 1);
    CHECK(test::run_cli({"report", image, "--provisioning", "fat"}).status == 1);
    CHECK(test::run_cli({"impact", image, "--plan", plan_path, "--provisioning", "3=thin"}).status == 2);

    // The text shows the section; report carries the same object for its plan.
    const auto text = test::run_cli({"impact", image, "--plan", plan_path});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("Carrying out the plan") != std::string::npos);
    CHECK(text.out.find("into new blocks") != std::string::npos);
    const Json report = run_json({"report", image, "--strategy", "optimize", "--order", "mft", "--json"});
    const Json& r = report["volumes"][0]["impact"]["figures"]["plan_writes"];
    CHECK(r["ios"] == w.stats.ios);
    CHECK(r["first_writes"] == w.stats.first_writes);
    CHECK(r["into_new_bytes"] == w.into_new_bytes);
}
