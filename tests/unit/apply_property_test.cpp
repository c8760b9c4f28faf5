// SPDX-License-Identifier: GPL-2.0-or-later
// Property: the planner plans only what apply carries out, and apply leaves what the plan
// predicted (docs/apply.md). Volumes are drawn from a seed (test::drawn_volume); each is
// planned with every strategy (optimize in each order), applied with its proofs into a qcow2
// overlay, and analysed again: every move is done, the proofs pass and the output has the
// fragments and free extents the plan said.
// The suite runs a few cases; bench/property.sh runs many, with larger lists:
//   GUESTFRAG_PROPERTY_CASES  cases (default 2)
//   GUESTFRAG_PROPERTY_SEED   first case's seed (default 1; case k has seed + k)
//   GUESTFRAG_PROPERTY_RUNS   most runs of a pair file (default 6000)
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "app/mkimage/mkimage.hpp"
#include "core/plan/planner.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

Json read_json(const fs::path& path) {
    std::ifstream in(path);
    return Json::parse(in);
}

/// plan → apply (proved) → analyze for one strategy (and order) on `image`.
void plan_apply_analyse(const fs::path& image, const test::WorkDir& dir,
                        const std::vector<std::string>& how) {
    std::string name;
    for (const std::string& word : how) name += word + " ";
    INFO("plan " << name);
    const fs::path plan_path = dir / "p.json";
    std::vector<std::string> plan_args{"plan", image.string(), "-o", plan_path.string()};
    plan_args.insert(plan_args.end(), how.begin(), how.end());
    const auto planned = test::run_cli(plan_args);
    INFO(planned.err);
    REQUIRE(planned.status == 0);
    const Json plan = read_json(plan_path);
    const Json& summary = plan["summary"];
    const std::size_t moves = plan["moves"].size();
    if (moves == 0) {
        CHECK(summary["fragments_after"] == summary["fragments_before"]);
        CHECK(summary["free_extents_after"] == summary["free_extents_before"]);
        return;
    }
    const fs::path out = dir / "out.qcow2";
    fs::remove(out);
    const auto applied = test::run_cli({"apply", image.string(), "--plan", plan_path.string(), "-o",
                                        out.string(), "--output-format", "qcow2", "--json"});
    INFO(applied.err);
    REQUIRE(applied.status == 0);
    const Json doc = Json::parse(applied.out);
    CHECK(doc["moves"]["done"] == moves);
    CHECK(doc["moves"]["skipped"] == 0);
    CHECK(doc["verification"]["passed"] == true);

    const auto analysed = test::run_cli({"analyze", out.string(), "--json"});
    REQUIRE(analysed.status == 0);
    const Json volume = Json::parse(analysed.out)["volumes"][0];
    CHECK(volume["files"]["fragments"] == summary["fragments_after"]);
    CHECK(volume["files"]["fragmented_streams"] == summary["fragmented_streams_after"]);
    CHECK(volume["free_space"]["extents"] == summary["free_extents_after"]);
    CHECK(volume["free_space"]["largest_extent_clusters"] == summary["largest_free_extent_clusters_after"]);
}

}  // namespace

TEST_CASE("every strategy's plan on drawn volumes is carried out whole and as predicted",
          "[apply][property]") {
    test::for_each_drawn_volume(
        "apply-property", 2, [](const MkImageOptions& volume, const test::WorkDir& dir) {
            INFO(test::mkimage_line(volume));
            const fs::path& image = volume.output;
            for (const Strategy strategy : kStrategies) {
                const std::string name(strategy_name(strategy));
                if (strategy != Strategy::Optimize) {
                    plan_apply_analyse(image, dir, {"--strategy", name});
                    continue;
                }
                for (const char* order : {"mft", "size", "path"})
                    plan_apply_analyse(image, dir, {"--strategy", name, "--order", order});
            }
        });
}
