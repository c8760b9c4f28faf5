// SPDX-License-Identifier: GPL-2.0-or-later
// The verdict (pipeline/verdict.hpp, docs/verdict.md): the rule on hand-computed plans, and
// the decision on real disks: a fragmented disk gets a plan that makes its workload faster,
// a disk with nothing worth doing gets no action with the reason, an image another process
// writes is named as the blocker, and `analyze --check` exits 0, 5 or 6.
#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>

#include "pipeline/verdict.hpp"
#include "support/fixtures.hpp"
#include "support/nbd_server.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

/// A plan that saves `saved` array seconds, costs `io` array seconds of its own IO, moves
/// `moved` bytes (one move when non-zero) and grows the disk by `growth` bytes.
WeighedPlan hand_plan(Strategy strategy, double saved, double io, std::uint64_t moved,
                      std::uint64_t growth = 0) {
    WeighedPlan p;
    p.options.strategy = strategy;
    if (moved > 0) p.planned.plan.moves.push_back({100, "$DATA", 0, 10, 20, 1});
    p.planned.plan.summary.moved_bytes = moved;
    p.saved = {saved, saved, saved};
    p.plan_io = {io, io, io};
    p.growth_bytes = growth;
    return p;
}

/// The rule over `plans` on a 10 GiB disk whose workload takes `now` seconds.
Verdict hand_verdict(double now, std::vector<WeighedPlan> plans) {
    Verdict v;
    v.now_seconds = now;
    v.disk_bytes = 10ull << 30;
    v.workload = parse_workload("scan");
    v.plans = std::move(plans);
    weigh(v, VerdictOptions{});
    return v;
}

}  // namespace

TEST_CASE("the verdict's rule on hand-computed plans", "[verdict]") {
    SECTION("a plan that makes the workload slower is never chosen: no action") {
        const Verdict v = hand_verdict(10, {hand_plan(Strategy::Defrag, -0.5, 1, 1 << 20)});
        CHECK_FALSE(v.chosen);
        CHECK(v.plans[0].rejected == "slower than now (+0.50 s)");
        CHECK(v.reason == "the best plan, defrag, slower than now (+0.50 s)");
    }
    SECTION("under 5 % of the workload's time, or under 0.1 s: no action") {
        // 5 % of 10 s is 0.5 s: 0.49 s falls short; 0.09 s of 1 s is 9 % but under 0.1 s.
        CHECK_FALSE(hand_verdict(10, {hand_plan(Strategy::Defrag, 0.49, 1, 1 << 20)}).chosen);
        CHECK_FALSE(hand_verdict(1, {hand_plan(Strategy::Defrag, 0.09, 0.1, 1 << 20)}).chosen);
        CHECK(hand_verdict(10, {hand_plan(Strategy::Defrag, 0.5, 1, 1 << 20)}).chosen == 0u);
    }
    SECTION("costs above the gain: the storage work it causes not repaid in 30 runs: no action") {
        // 1 s saved a run repays 30 s of storage work, not 30.5 s.
        const Verdict v = hand_verdict(10, {hand_plan(Strategy::Optimize, 1, 30.5, 1 << 30)});
        CHECK_FALSE(v.chosen);
        CHECK(v.plans[0].rejected == "work 30.5 s not repaid in 30 runs");
        CHECK(hand_verdict(10, {hand_plan(Strategy::Optimize, 1, 30, 1 << 30)}).chosen == 0u);
        // The work is the own IO, the next backup's delta and the next full copy's extra
        // reads: 20 + 8 + 2.5 s is 30.5 s.
        WeighedPlan p = hand_plan(Strategy::Optimize, 1, 20, 1 << 30);
        p.backup_reads = {8, 8, 8};
        p.copy_added = {2.5, 2.5, 2.5};
        CHECK(hand_verdict(10, {p}).plans[0].rejected == "work 30.5 s not repaid in 30 runs");
        p.copy_added = {2, 2, 2};
        CHECK(hand_verdict(10, {p}).chosen == 0u);
    }
    SECTION("costs above the gain: growth of a tenth of the disk, net of what the plan frees: no action") {
        // 1 GiB on the 10 GiB disk is a tenth; 1 GiB − 1 MiB is not.
        const Verdict v = hand_verdict(10, {hand_plan(Strategy::Optimize, 5, 1, 2ull << 30, 1ull << 30)});
        CHECK_FALSE(v.chosen);
        CHECK(v.plans[0].rejected == "net growth 1.00 GiB >= 10 % of disk");
        CHECK(v.reason == "the best plan, optimize, net growth 1.00 GiB >= 10 % of disk");
        CHECK(hand_verdict(10, {hand_plan(Strategy::Optimize, 5, 1, 2ull << 30, (1ull << 30) - (1 << 20))})
                  .chosen == 0u);
        // 3 GiB written into new granules, 2.5 GiB freed for reclaim: 512 MiB net, it passes.
        WeighedPlan offset = hand_plan(Strategy::Optimize, 5, 1, 3ull << 30, 3ull << 30);
        offset.freed_bytes = 5ull << 29;
        CHECK(offset.net_growth_bytes() == 512ull << 20);
        CHECK(hand_verdict(10, {offset}).chosen == 0u);
    }
    SECTION("the most seconds saved; within a tenth of it, the least growth, then the least moved") {
        const Verdict v = hand_verdict(20, {hand_plan(Strategy::Defrag, 3.0, 5, 300 << 20, 100 << 20),
                                            hand_plan(Strategy::Consolidate, 2.8, 5, 400 << 20, 0),
                                            hand_plan(Strategy::ThinSafe, 2.8, 5, 200 << 20, 0),
                                            hand_plan(Strategy::Optimize, 2.6, 5, 100 << 20, 0)});
        // 2.6 s is under 0.9 · 3.0 = 2.7 s; of the other three, consolidate and thin-safe grow
        // nothing, and thin-safe moves less.
        CHECK(v.chosen == 2u);
        CHECK(v.reason == "thin-safe saves 2.8 s of 20.0 s on the array model for scan (14 %)");
        CHECK(v.plans[3].rejected.empty());
    }
    SECTION("a plan that could not be carried out is out whatever it saves; the next best is chosen") {
        WeighedPlan failed = hand_plan(Strategy::Optimize, 5.0, 1, 1 << 30);
        failed.failure = "cannot be carried out: apply would not carry out move 3 of the plan";
        const Verdict v = hand_verdict(20, {failed, hand_plan(Strategy::Defrag, 2.0, 1, 1 << 20)});
        CHECK(v.chosen == 1u);
        CHECK(v.plans[0].rejected == failed.failure);
    }
    SECTION("nothing moves: nothing to defragment") {
        const Verdict v =
            hand_verdict(5, {hand_plan(Strategy::Defrag, 0, 0, 0), hand_plan(Strategy::Shrink, 0, 0, 0)});
        CHECK_FALSE(v.chosen);
        CHECK(v.plans[1].rejected == "moves nothing");
        CHECK(v.reason == "nothing to defragment: no plan weighed finds a move worth making");
    }
}

TEST_CASE("the verdict on a fragmented disk: a plan that makes the scan faster on the array model",
          "[verdict][cli]") {
    const std::string image = test::fragmented_256_image().string();
    const OpenedImage opened = open_and_analyze(image);
    const Verdict v = decide(opened, 0, VerdictOptions{});
    REQUIRE(v.chosen);
    const WeighedPlan& p = v.plans[*v.chosen];
    CHECK(p.options.strategy == Strategy::Optimize);
    CHECK(p.rejected.empty());
    // The chosen plan's estimate is better than no action on the device decided on, by the rule.
    CHECK(p.saved.array >= 0.05 * v.now_seconds);
    CHECK(p.saved.array >= 0.1);
    CHECK(p.estimate.after->stats.device_seconds.array < p.estimate.before.stats.device_seconds.array);
    CHECK(v.blockers.empty());
    // Every strategy weighed, each plan the one `plan` makes for it.
    CHECK(v.plans.size() >= 5);
    for (const WeighedPlan& w : v.plans) {
        INFO(strategy_name(w.options.strategy) << " " << w.planned.plan.order);
        // The work the rule weighs: the plan's own IO, the next backup reading its 64 KiB CBT
        // delta (impact's figure, read whole) and a full copy's extra reads, none negative.
        CHECK(w.backup_reads.array == w.impact.backup_delta_reads.device_seconds.array);
        CHECK(w.impact.backup_delta_reads.bytes == w.impact.snapshot.at(1).bytes);
        CHECK(w.copy_added.array >= 0);
        CHECK(w.storage_work().array == Approx(w.plan_io.array + w.backup_reads.array + w.copy_added.array));
        CHECK((w.backup_reads.array > 0) == !w.planned.plan.moves.empty());
        std::vector<std::string> args{"plan", image, "--strategy",
                                      std::string(strategy_name(w.options.strategy)), "--json"};
        if (!w.planned.plan.order.empty()) args.insert(args.end(), {"--order", w.planned.plan.order});
        const auto planned = test::run_cli(args);
        REQUIRE(planned.status == 0);
        CHECK(nlohmann::json::parse(planned.out)["summary"]["moved_bytes"] ==
              w.planned.plan.summary.moved_bytes);
    }

    const auto check = test::run_cli({"analyze", image, "--check"});
    CHECK(check.status == 5);
    CHECK(check.out.rfind("Partition 1: defragment with optimize", 0) == 0);
    const auto report = test::run_cli({"report", image});
    CHECK(report.status == 0);
    CHECK(report.out.rfind("Partition 1: defragment with optimize", 0) == 0);
    std::size_t lines = 0;
    std::istringstream text(report.out);
    for (std::string line; std::getline(text, line); ++lines) CHECK(line.size() <= 100);
    CHECK(lines <= 40);

    // analyze's JSON carries the same verdict as report's: one decision, figure for figure.
    const auto analysed = test::run_cli({"analyze", image, "--json"});
    const auto reported = test::run_cli({"report", image, "--json"});
    REQUIRE(analysed.status == 0);
    REQUIRE(reported.status == 0);
    // The volume serial as the plan file writes it: 16 hex digits, no JSON number's rounding.
    const auto plan_file = test::run_cli({"plan", image, "--json"});
    CHECK(nlohmann::json::parse(analysed.out)["volumes"][0]["serial"] ==
          nlohmann::json::parse(plan_file.out)["identity"]["volume_serial"]);
    const nlohmann::json verdict = nlohmann::json::parse(analysed.out)["volumes"][0]["verdict"];
    CHECK(verdict["action"] == "plan");
    CHECK(verdict["plans"][verdict["chosen"].get<std::size_t>()]["strategy"] == "optimize");
    CHECK(verdict == nlohmann::json::parse(reported.out)["volumes"][0]["verdict"]);
    const auto bare = test::run_cli({"analyze", image, "--json", "--no-verdict"});
    CHECK_FALSE(nlohmann::json::parse(bare.out)["volumes"][0].contains("verdict"));
    for (const auto& plan : verdict["plans"]) CHECK(plan["dedup_rescan_seconds"].is_null());
}

TEST_CASE("storage that deduplicates after the fact: the re-scan of the chunks a plan writes is in its work",
          "[verdict][cli]") {
    const std::string image = test::fragmented_256_image().string();
    VerdictOptions options;
    options.dedup_chunk = 4096;
    const Verdict v = decide(open_and_analyze(image), 0, options);
    for (const WeighedPlan& w : v.plans) {
        INFO(strategy_name(w.options.strategy) << " " << w.planned.plan.order);
        // Every 4 KiB chunk the plan writes, read once: impact's changed chunks of 4 KiB.
        REQUIRE(w.impact.dedup_rescan_reads);
        CHECK(w.impact.dedup_rescan_reads->bytes == w.impact.dedup.at(0).changed_chunks * 4096);
        CHECK(w.dedup_rescan.array == w.impact.dedup_rescan_reads->device_seconds.array);
        CHECK(w.storage_work().array ==
              Approx(w.plan_io.array + w.backup_reads.array + w.copy_added.array + w.dedup_rescan.array));
        CHECK((w.dedup_rescan.array > 0) == !w.planned.plan.moves.empty());
    }
    const auto report = test::run_cli({"report", image, "--dedup-chunk", "4K", "--json"});
    REQUIRE(report.status == 0);
    const nlohmann::json plans = nlohmann::json::parse(report.out)["volumes"][0]["verdict"]["plans"];
    REQUIRE(plans.size() == v.plans.size());
    for (std::size_t i = 0; i < plans.size(); ++i)
        CHECK(plans[i]["dedup_rescan_seconds"]["array"].get<double>() ==
              Approx(v.plans[i].dedup_rescan.array));
    CHECK(test::run_cli({"report", image, "--dedup-chunk", "4K"}).out.find("dedup re-scan +") !=
          std::string::npos);
    // analyze's verdict weighs the same: its JSON's plans are report's.
    const auto analysed = test::run_cli({"analyze", image, "--dedup-chunk", "4K", "--json"});
    REQUIRE(analysed.status == 0);
    CHECK(nlohmann::json::parse(analysed.out)["volumes"][0]["verdict"]["plans"] == plans);
    // A chunk no deduplicator uses is a usage error naming the option, before any image is read.
    for (const char* command : {"report", "analyze"}) {
        const auto bad = test::run_cli({command, image, "--dedup-chunk", "3K"});
        CHECK(bad.status == 1);
        CHECK(bad.err ==
              "guestfrag: error: --dedup-chunk: dedup chunk size 3072 is not a power of two between 512 B "
              "and 64 "
              "MiB\n");
    }
}

TEST_CASE("a trace the volume does not hold: the verdict weighs scan instead and says so in one line",
          "[verdict][cli]") {
    const std::string image = test::fragmented_256_image().string();
    const auto r = test::run_cli({"report", image, "--workload", "trace:@prefetch"});
    CHECK(r.status == 0);
    CHECK(r.err ==
          "guestfrag: warning: the volume has no \\Windows\\Prefetch directory (not a Windows system "
          "volume, or prefetching is off): the verdict weighs scan instead\n");
    CHECK(r.out.find("Plans weighed: scan (windows guest) on the array model") != std::string::npos);
}

TEST_CASE("the verdict on a volume with nothing worth doing: no action, the reason, exit 0",
          "[verdict][cli]") {
    const std::string image = test::testdata("windows_volume.qcow2").string();
    const auto check = test::run_cli({"analyze", image, "--check"});
    CHECK(check.status == 0);
    CHECK(check.out.rfind("Partition 0: no action\n  why      the best plan, ", 0) == 0);
}

TEST_CASE("the verdict names an image another process writes as the blocker, exit 6",
          "[verdict][cli][lock]") {
    test::require_tools({"qemu-nbd"});
    const test::WorkDir dir("verdict-held");
    const fs::path image = dir / "in.img";
    fs::copy_file(test::fragmented_256_image(), image);
    const test::NbdServer server("qemu-nbd", {"--format=raw", image.string()});
    const auto check = test::run_cli({"analyze", image.string(), "--check"});
    CHECK(check.status == 6);
    CHECK(check.out.find("(blocked now)") != std::string::npos);
    CHECK(check.out.find("  blocked  " + image.string() + " is open for writing by another process") !=
          std::string::npos);
}
