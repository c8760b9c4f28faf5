// SPDX-License-Identifier: GPL-2.0-or-later
// Property: the planner plans only what apply carries out, and apply leaves what the plan
// predicted (docs/apply.md). Volumes are drawn from a seed: cluster size (512 B to 64 KiB),
// how many runs the attribute-list pair reaches (its lists from a few entries to, in the long
// run, hundreds, resident or not), how many files grow side by side, deletions, named and
// compressed streams and the sparse file. Each is planned with every strategy (optimize in
// each order), applied with its proofs into a qcow2 overlay, and analysed again: every move
// is done, the proofs pass and the output has the fragments and free extents the plan said.
// The suite runs a few cases; bench/apply_property.sh runs many, with larger lists:
//   GUESTFRAG_PROPERTY_CASES  cases (default 2)
//   GUESTFRAG_PROPERTY_SEED   first case's seed (default 1; case k has seed + k)
//   GUESTFRAG_PROPERTY_RUNS   most runs of a pair file (default 6000)
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/mkimage/mkimage.hpp"
#include "core/plan/planner.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::uint64_t setting(const char* name, std::uint64_t fallback) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? std::stoull(value) : fallback;
}

/// The volume of case `seed`: every choice drawn from it, so a failing case is made again by
/// its seed alone (and the largest list the run allows).
MkImageOptions draw_volume(std::uint32_t seed, std::uint64_t max_runs) {
    std::mt19937_64 rng(seed);
    const auto uniform = [&rng](std::uint64_t lo, std::uint64_t hi) {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
    };
    MkImageOptions o;
    o.seed = seed;
    o.cluster_size = 512u << uniform(0, 7);
    // Below 4 KiB clusters each run of the pair takes 4 KiB (mkimage's population); the pair
    // gets at most an eighth of the file budget each, and the disk stays under 512 MiB.
    const std::uint64_t run_bytes = std::max<std::uint64_t>(o.cluster_size, 4096);
    const std::uint64_t room = std::max<std::uint64_t>(100, (448ull << 20) / (16 * run_bytes));
    const double top = static_cast<double>(std::min(max_runs, room));
    o.list_runs = static_cast<std::uint64_t>(std::exp(std::uniform_real_distribution<double>(std::log(100.0),
                                                                                             std::log(top))(rng)));
    o.disk_size = std::max<std::uint64_t>({64ull << 20, std::uint64_t{o.cluster_size} * 4096,
                                           (16 * o.list_runs * run_bytes + (48ull << 20)) >> 20 << 20});
    o.table = uniform(0, 1) == 0 ? "none" : "msdos";
    o.files = uniform(150, 500);
    o.interleave = static_cast<std::uint32_t>(uniform(1, 24));
    o.delete_fraction = static_cast<double>(uniform(10, 50)) / 100;
    o.named_stream_every = static_cast<std::uint32_t>(std::array{0, 10, 50}[uniform(0, 2)]);
    o.compressed = o.cluster_size <= 4096 && uniform(0, 1) == 1;
    return o;
}

std::string describe(const MkImageOptions& o) {
    std::ostringstream text;
    text << "mkimage --size " << (o.disk_size >> 20) << "MiB --table " << o.table << " --cluster-size "
         << o.cluster_size << " --files " << o.files << " --interleave " << o.interleave << " --delete-fraction "
         << o.delete_fraction << " --named-stream-every " << o.named_stream_every << " --list-runs " << o.list_runs
         << (o.compressed ? " --compressed" : "") << " --seed " << o.seed;
    return text.str();
}

Json read_json(const fs::path& path) {
    std::ifstream in(path);
    return Json::parse(in);
}

/// plan → apply (proved) → analyze for one strategy (and order) on `image`.
void plan_apply_analyse(const fs::path& image, const test::WorkDir& dir, const std::vector<std::string>& how) {
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
    const auto applied = test::run_cli({"apply", image.string(), "--plan", plan_path.string(), "-o", out.string(),
                                        "--output-format", "qcow2", "--json"});
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

TEST_CASE("every strategy's plan on drawn volumes is carried out whole and as predicted", "[apply][property]") {
    const std::uint64_t cases = setting("GUESTFRAG_PROPERTY_CASES", 2);
    const std::uint64_t first = setting("GUESTFRAG_PROPERTY_SEED", 1);
    const std::uint64_t max_runs = setting("GUESTFRAG_PROPERTY_RUNS", 6000);
    for (std::uint64_t k = 0; k < cases; ++k) {
        const test::WorkDir dir("apply-property");
        MkImageOptions options = draw_volume(static_cast<std::uint32_t>(first + k), max_runs);
        options.output = dir / "in.img";
        INFO("case " << k << ": " << describe(options));
        make_image(options);
        for (const Strategy strategy : kStrategies) {
            const std::string name(strategy_name(strategy));
            if (strategy != Strategy::Optimize) {
                plan_apply_analyse(options.output, dir, {"--strategy", name});
                continue;
            }
            for (const char* order : {"mft", "size", "path"})
                plan_apply_analyse(options.output, dir, {"--strategy", name, "--order", order});
        }
    }
}
