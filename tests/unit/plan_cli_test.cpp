// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag plan` and the guestfrag.plan.v1 document: round trips, and plans that are
// malformed, hostile or made for another image.
#include <catch2/catch.hpp>

#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"
#include "core/plan/planner.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

MkImageOptions cli_disk(std::uint32_t seed) {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 300;
    o.seed = seed;
    return o;
}

fs::path image() { return test::generated_image("plan-cli", cli_disk(21)); }
fs::path other_image() { return test::generated_image("plan-cli-other", cli_disk(22)); }

void write(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

/// The optimize plan of image() as JSON, made once by the CLI (on this small, full volume
/// defrag finds no move that keeps free space as good as it was).
const Json& plan_document() {
    static const Json doc = [] {
        // Every test case runs in its own process, possibly beside another one: each makes
        // its own file, or one could read what the other is still writing.
        const fs::path out = test::scratch_dir() / ("plan-cli-optimize-" + std::to_string(::getpid()) + ".json");
        const auto r = test::run_cli({"plan", image().string(), "--strategy", "optimize", "-o", out.string()});
        INFO(r.err);
        REQUIRE(r.status == 0);
        return Json::parse(test::file_contents(out));
    }();
    return doc;
}

/// Runs `plan IMAGE --check` on `doc` written to a scratch file.
test::CommandResult check(const Json& doc, const std::string& name, const fs::path& img = image()) {
    const fs::path path = test::scratch_dir() / ("plan-cli-" + name + ".json");
    write(path, doc.dump(1));
    return test::run_cli({"plan", img.string(), "--check", path.string()});
}

ClusterSet::interval_type r(std::int64_t lo, std::int64_t hi) { return ClusterSet::interval_type::right_open(lo, hi); }

}  // namespace

TEST_CASE("plan --json follows guestfrag.plan.v1 and matches the core", "[plan][cli][json]") {
    const auto r = test::run_cli({"plan", image().string(), "--strategy", "optimize", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    CHECK(doc["schema"] == "guestfrag.plan.v1");
    CHECK(doc["image"]["path"] == image().string());
    CHECK(doc["image"]["virtual_size"] == fs::file_size(image()));
    CHECK(doc["strategy"] == "optimize");
    CHECK(doc["identity"]["allocation_digest"].get<std::string>().size() == 16);

    // The same plan as the core makes.
    const auto disk = open_image(image().string());
    const ImageAnalysis a = analyze_image(*disk);
    const VolumeMap& map = a.volumes.at(0).map;
    CHECK(doc["partition"] == map.partition);
    PlanOptions options;
    options.strategy = Strategy::Optimize;
    const Plan plan = make_plan(map, a.layers, identify(map, disk->path(), disk->size()), options);
    REQUIRE(doc["moves"].size() == plan.moves.size());
    REQUIRE_FALSE(plan.moves.empty());
    for (std::size_t i = 0; i < plan.moves.size(); ++i) {
        const Json& m = doc["moves"][i];
        const Move& want = plan.moves[i];
        CHECK(m.size() == 6);
        CHECK(m["mft_record"] == want.mft_record);
        CHECK(m["stream"] == want.stream.str());
        CHECK(m["vcn"] == want.vcn);
        CHECK(m["from_lcn"] == want.from_lcn);
        CHECK(m["to_lcn"] == want.to_lcn);
        CHECK(m["clusters"] == want.clusters);
    }
    const Json& s = doc["summary"];
    CHECK(s["moves"] == plan.summary.moves);
    CHECK(s["moved_bytes"] == plan.summary.moved_bytes);
    CHECK(s["fragments_before"] == plan.summary.fragments_before);
    CHECK(s["fragments_after"] == plan.summary.fragments_after);
    CHECK(s["fragmented_streams_before"] == plan.summary.fragmented_streams_before);
    CHECK(s["fragmented_streams_after"] == plan.summary.fragmented_streams_after);
    CHECK(s["thin_growth_bytes"] == plan.summary.thin_growth_bytes);
    CHECK(s["clone_delta_growth_bytes"] == plan.summary.clone_delta_growth_bytes);
    CHECK(s["reclaimable_bytes"] == plan.summary.reclaimable_bytes_after);
    CHECK(s["reclaimable_bytes_before"] == plan.summary.reclaimable_bytes_before);
    // The CLI adds the analyzers' free-space fragmentation before and after.
    CHECK(s["free_space_fragmentation_percent_before"].get<double>() ==
          Approx(a.volumes[0].free_space.fragmentation_percent));
    CHECK(s["free_space_fragmentation_percent_after"].get<double>() ==
          Approx(analyze_free_space(apply_plan(map, plan)).fragmentation_percent));
    CHECK(doc["skipped"].is_array());
    CHECK(doc["notes"].is_array());
}

TEST_CASE("plan -o writes the document, prints the summary and --check accepts it", "[plan][cli]") {
    const fs::path out = test::scratch_dir() / "plan-cli-o.json";
    fs::remove(out);
    const auto r = test::run_cli({"plan", image().string(), "--strategy", "consolidate", "-o", out.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.starts_with("Plan for " + image().string() +
                            ", partition 1 (strategy consolidate, order mft)"));
    CHECK(r.out.find("free extents") != std::string::npos);
    // It says where the plan went and how to carry it out.
    CHECK_THAT(r.out, Catch::Contains("Plan written to " + out.string() + "; carry it out") &&
                          Catch::Contains("guestfrag apply " + image().string() + " --plan " + out.string()));
    // A plan that cannot be written is refused with the system's reason.
    const auto nowhere = test::run_cli({"plan", image().string(), "-o", "/nonexistent/p.json"});
    CHECK(nowhere.status == 2);
    CHECK(nowhere.err ==
          "guestfrag: error: /nonexistent/p.json: cannot write the plan: No such file or directory\n");
    const Plan plan = read_plan(out.string());
    CHECK(plan.strategy == "consolidate");
    CHECK(plan.summary.free_extents_after < plan.summary.free_extents_before);

    const auto checked = test::run_cli({"plan", image().string(), "--check", out.string(), "--json"});
    INFO(checked.err);
    REQUIRE(checked.status == 0);
    const Json doc = Json::parse(checked.out);
    CHECK(doc["summary"]["free_extents_after"] == plan.summary.free_extents_after);
    CHECK(doc["moves"].size() == plan.moves.size());

    for (const char* strategy : {"thin-safe", "shrink"}) {
        const auto s = test::run_cli({"plan", image().string(), "--strategy", strategy, "--granule", "64K", "--json"});
        INFO(strategy << ": " << s.err);
        REQUIRE(s.status == 0);
        CHECK(Json::parse(s.out)["summary"]["granule_size"] == 65536);
        CHECK(Json::parse(s.out)["summary"]["thin_growth_bytes"] == 0);
    }
    const auto budget = test::run_cli({"plan", image().string(), "--max-moved", "256K", "--json"});
    REQUIRE(budget.status == 0);
    CHECK(Json::parse(budget.out)["summary"]["moved_bytes"].get<std::uint64_t>() <= 256 * 1024);
}

TEST_CASE("plan usage errors exit 1", "[plan][cli]") {
    CHECK(test::run_cli({"plan"}).status == 1);
    CHECK(test::run_cli({"plan", image().string(), "--strategy", "tidy"}).status == 1);
    CHECK(test::run_cli({"plan", image().string(), "--max-growth", "lots"}).status == 1);
    // A checked plan is not made again, so it has no frontier: the pair is a usage error
    // naming both, not a silent success.
    const auto both = test::run_cli({"plan", image().string(), "--check", "p.json", "--frontier"});
    CHECK(both.status == 1);
    CHECK(both.err.find("--check") != std::string::npos);
    CHECK(both.err.find("--frontier") != std::string::npos);
}

TEST_CASE("hostile or malformed plans are refused with exit 2, naming the move", "[plan][cli][bad]") {
    const Json& good = plan_document();
    REQUIRE(good["moves"].size() >= 3);
    const auto refused = [](const test::CommandResult& res, const std::string& reason) {
        INFO(res.err);
        CHECK(res.status == 2);
        CHECK(res.err.starts_with("guestfrag: error: "));
        CHECK(res.err.find(reason) != std::string::npos);
        CHECK(std::count(res.err.begin(), res.err.end(), '\n') == 1);
    };

    SECTION("the untouched plan passes") { CHECK(check(good, "good").status == 0); }
    SECTION("overlapping moves") {
        Json doc = good;
        doc["moves"][1]["to_lcn"] = doc["moves"][0]["to_lcn"];
        refused(check(doc, "overlap"), "move 1: destination [");
    }
    SECTION("destination past the end of the volume") {
        Json doc = good;
        doc["moves"][0]["to_lcn"] = doc["identity"]["total_clusters"].get<std::int64_t>();
        refused(check(doc, "outside"), "move 0: destination [");
        refused(check(doc, "outside"), "lies outside the volume");
    }
    SECTION("source the stream does not own") {
        Json doc = good;
        doc["moves"][2]["from_lcn"] = doc["moves"][2]["from_lcn"].get<std::int64_t>() + 1;
        refused(check(doc, "source"), "move 2: record ");
    }
    SECTION("a stream that does not exist") {
        Json doc = good;
        doc["moves"][0]["stream"] = "$DATA:nothing-here";
        refused(check(doc, "stream"), "move 0: record ");
        refused(check(doc, "stream"), "does not exist");
    }
    SECTION("huge, negative and fractional numbers") {
        Json doc = good;
        doc["moves"][2]["from_lcn"] = 9223372036854775808ull;  // 2^63
        refused(check(doc, "huge"), "move 2: \"from_lcn\" must be an integer from 0 to 2^62");
        doc = good;
        doc["moves"][1]["to_lcn"] = 1e30;
        refused(check(doc, "float"), "move 1: \"to_lcn\" must be an integer");
        doc = good;
        doc["moves"][0]["vcn"] = -5;
        refused(check(doc, "negative"), "move 0: \"vcn\" must be an integer");
        doc = good;
        doc["moves"][0]["clusters"] = 0;
        refused(check(doc, "zero"), "move 0: \"clusters\" must be an integer from 1");
        doc = good;
        doc["moves"][1]["clusters"] = (1ll << 62) + 1;
        refused(check(doc, "over62"), "move 1: \"clusters\" must be an integer");
    }
    SECTION("missing fields and wrong types") {
        Json doc = good;
        doc["moves"][0].erase("clusters");
        refused(check(doc, "missing"), "move 0: missing field \"clusters\"");
        doc = good;
        doc["moves"][1]["stream"] = 7;
        refused(check(doc, "type"), "move 1: \"stream\" must be a non-empty string");
        doc = good;
        doc["moves"][2] = Json::array({1, 2, 3});
        refused(check(doc, "array"), "move 2: must be an object");
        doc = good;
        doc.erase("identity");
        refused(check(doc, "no-identity"), "plan: missing field \"identity\"");
    }
    SECTION("wrong schema") {
        Json doc = good;
        doc["schema"] = "guestfrag.plan.v0";
        refused(check(doc, "schema"), "schema is not guestfrag.plan.v1");
    }
    SECTION("truncated JSON") {
        const std::string text = good.dump(1);
        const fs::path path = test::scratch_dir() / "plan-cli-truncated.json";
        write(path, text.substr(0, text.size() / 2));
        refused(test::run_cli({"plan", image().string(), "--check", path.string()}), "plan is not valid JSON");
        CHECK(test::run_cli({"plan", image().string(), "--check", path.string()}).err.starts_with(
            "guestfrag: error: " + path.string() + ": "));
    }
    SECTION("a number no double holds") {
        // The JSON parser refuses 1e611 with its own range error, not a syntax error.
        std::string text = good.dump(1);
        const std::size_t at = text.find("\"vcn\": ");
        REQUIRE(at != std::string::npos);
        text.insert(at + 7, "1e611, \"x\": ");
        const fs::path path = test::scratch_dir() / "plan-cli-overflow.json";
        write(path, text);
        refused(test::run_cli({"plan", image().string(), "--check", path.string()}), "plan is not valid JSON");
    }
    SECTION("no such plan") {
        refused(test::run_cli({"plan", image().string(), "--check", "/nonexistent/plan.json"}), "cannot open plan");
    }
}

TEST_CASE("a plan for another image, or for a changed image, is refused", "[plan][cli][identity]") {
    const Json& good = plan_document();
    const auto other = check(good, "other", other_image());
    INFO(other.err);
    CHECK(other.status == 2);
    CHECK(other.err.find("plan was made for another image or the image changed since (") != std::string::npos);

    Json changed = good;
    changed["identity"]["allocation_digest"] = "0123456789abcdef";
    const auto c = check(changed, "changed");
    CHECK(c.status == 2);
    CHECK(c.err.find("(allocation digest 0123456789abcdef in the plan, ") != std::string::npos);
}

TEST_CASE("read_plan and plan_to_json round-trip every field", "[plan][json]") {
    VolumeMap v;
    v.partition = 2;
    v.cluster_size = 4096;
    v.total_clusters = 64;
    v.serial = 0xfedcba9876543210ULL;
    // A's two pieces (4-7, 14-17) go to 18-25; their places join 0-3 and 8-13 into 0-17, so
    // free space ends less fragmented and defrag keeps the plan.
    v.free.add(r(0, 4));
    v.free.add(r(8, 14));
    v.free.add(r(18, 26));
    v.free.add(r(30, 64));
    Stream a;
    a.mft_record = 64;
    a.type = static_cast<std::uint32_t>(AttrType::Data);
    a.name = "ads \"quoted\" é";
    a.extents = {{0, 4, 4}, {4, 14, 4}};
    v.streams.push_back(a);
    FileEntry f;
    f.mft_record = 64;
    f.parent = 5;
    f.name = "file.bin";
    v.files.push_back(f);

    Plan plan = make_plan(v, {}, identify(v, "/some/where.img", 1 << 20), {});
    REQUIRE(plan.moves.size() == 2);
    plan.skipped.push_back({64, "$DATA", "a reason with \"quotes\""});
    plan.notes.push_back("a note");
    plan.summary.free_space_fragmentation_percent_before = 12.5;
    plan.summary.free_space_fragmentation_percent_after = 3.25;

    const std::string text = plan_to_json(plan, v);
    const Json doc = Json::parse(text);
    CHECK(doc["identity"]["volume_serial"] == "fedcba9876543210");
    CHECK(doc["skipped"][0]["path"] == "\\file.bin");
    const fs::path path = test::scratch_dir() / "plan-roundtrip.json";
    write(path, text);
    const Plan back = read_plan(path.string());
    CHECK(back.identity == plan.identity);
    CHECK(back.strategy == plan.strategy);
    CHECK(back.moves == plan.moves);
    CHECK(back.summary == plan.summary);
    CHECK(back.skipped == plan.skipped);
    CHECK(back.notes == plan.notes);
    CHECK(plan_to_json(back, v) == text);
}
