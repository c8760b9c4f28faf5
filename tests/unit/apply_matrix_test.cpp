// SPDX-License-Identifier: GPL-2.0-or-later
// The contract of apply: every move a plan made by `plan` holds is carried out, and the
// output is what the plan predicted. One case per cluster size from 512 B to 64 KiB, each
// planning and applying every strategy on a generated volume with attribute-list files, a
// sparse file and (up to 4 KiB clusters) compressed files. Oracles: The Sleuth Kit's reading of
// every file the plan moves and of the special files, ntfsfix, and guestfrag's own analysis
// of the output against the plan's summary.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "app/mkimage/mkimage.hpp"
#include "core/plan/planner.hpp"
#include "support/fixtures.hpp"
#include "support/tsk_oracle.hpp"

using namespace guestfrag;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// A bare volume of `cluster` clusters: the special files (two attribute-list logs, the
/// sparse database, compressed logs where NTFS compresses), and a few hundred files grown
/// side by side. Larger clusters need a larger volume for the same number of clusters' worth
/// of fragments.
fs::path matrix_image(std::uint32_t cluster) {
    MkImageOptions o;
    o.table = "none";
    o.cluster_size = cluster;
    // Enough room for the attribute-list pair's hundreds of runs at every cluster size.
    o.disk_size = std::max<std::uint64_t>(48ull << 20, std::uint64_t{cluster} * 4096);
    o.files = 240;
    o.interleave = 8;
    o.delete_fraction = 0.3;
    o.compressed = cluster <= 4096;
    o.seed = 31;
    return test::generated_image("apply-matrix-" + std::to_string(cluster), o);
}

/// What `icat IMAGE RECORD` reads, for every record with a file or stream TSK lists: the
/// record's unnamed $DATA, read by tsk_contents in a few processes rather than one per record.
using RecordContents = std::map<std::uint64_t, std::string>;
RecordContents record_contents(const fs::path& image) {
    const auto files = test::tsk_files(image, 0);
    auto contents = test::tsk_contents(image, 0, files);
    RecordContents out;
    for (const auto& [path, address] : files)
        if (path.find(':') == std::string::npos) out[std::stoull(address)] = std::move(contents.at(path));
    return out;
}

/// `icat IMAGE RECORD`, from `known` when it holds the record (directories it does not).
std::string icat(const RecordContents& known, const fs::path& image, std::uint64_t record) {
    const auto it = known.find(record);
    return it != known.end() ? it->second : test::tsk_icat(image, 0, std::to_string(record));
}

/// Plans `strategy` on `image`, applies it with verification and checks that every move was
/// done and the output is the plan's prediction, by TSK, ntfsfix and a new analysis;
/// returns the plan's moves.
std::size_t plan_apply_prove(const fs::path& image, const RecordContents& input, const std::string& strategy,
                             const std::set<std::uint64_t>& specials) {
    INFO("strategy " << strategy);
    const test::WorkDir dir("apply-matrix-" + strategy);
    const fs::path plan_path = dir / "p.json";
    const auto planned =
        test::run_cli({"plan", image.string(), "--strategy", strategy, "-o", plan_path.string()});
    INFO(planned.err);
    REQUIRE(planned.status == 0);
    const Json plan = Json::parse(test::file_contents(plan_path));
    const std::size_t moves = plan["moves"].size();
    if (moves == 0) {
        // A strategy with nothing to do here (shrink finds no granule to empty on some
        // volumes) predicts no change; run_matrix requires optimize to move data.
        CHECK(plan["summary"]["fragments_after"] == plan["summary"]["fragments_before"]);
        return 0;
    }

    const fs::path out = dir / "out.img";
    const auto applied =
        test::run_cli({"apply", image.string(), "--plan", plan_path.string(), "-o", out.string(), "--json"});
    INFO(applied.err);
    REQUIRE(applied.status == 0);
    const Json doc = Json::parse(applied.out);
    CHECK(doc["moves"]["planned"] == moves);
    CHECK(doc["moves"]["done"] == moves);
    CHECK(doc["moves"]["skipped"] == 0);
    CHECK(doc["verification"]["passed"] == true);
    CHECK(doc["verification"]["fragments_after"] == plan["summary"]["fragments_after"]);

    // A new analysis of the output gives the plan's figures.
    const auto analysed = test::run_cli({"analyze", out.string(), "--json"});
    REQUIRE(analysed.status == 0);
    const Json volume = Json::parse(analysed.out)["volumes"][0];
    CHECK(volume["files"]["fragments"] == plan["summary"]["fragments_after"]);
    CHECK(volume["files"]["fragmented_streams"] == plan["summary"]["fragmented_streams_after"]);
    CHECK(volume["free_space"]["extents"] == plan["summary"]["free_extents_after"]);
    CHECK(volume["free_space"]["largest_extent_clusters"] ==
          plan["summary"]["largest_free_extent_clusters_after"]);

    // The Sleuth Kit reads every moved file and every special file as the input holds it.
    std::set<std::uint64_t> records = specials;
    for (const auto& m : plan["moves"]) records.insert(m["mft_record"].get<std::uint64_t>());
    const RecordContents output = record_contents(out);
    for (const std::uint64_t record : records) {
        INFO("record " << record);
        const std::string in = icat(input, image, record);
        CHECK(!in.empty());
        CHECK(icat(output, out, record) == in);
    }

    // ntfsfix checks the output as a volume; it opens its device read-write even with -n.
    const auto fix = test::run({"ntfsfix", "-n", out.string()});
    INFO(fix.out << fix.err);
    CHECK(fix.status == 0);
    CHECK(fix.out.find("processed successfully") != std::string::npos);
    return moves;
}

void run_matrix(std::uint32_t cluster) {
    test::require_tools({"icat", "istat", "fls", "ntfsfix"});
    const fs::path image = matrix_image(cluster);
    const RecordContents input = record_contents(image);
    // The files whose layouts are hardest to move, by what mkimage made.
    const auto listed = test::run_cli({"analyze", image.string(), "--json", "--files"});
    REQUIRE(listed.status == 0);
    std::set<std::uint64_t> specials;
    std::size_t compressed = 0;
    std::size_t sparse = 0;
    const Json analysis = Json::parse(listed.out);
    for (const auto& s : analysis["volumes"][0]["streams"]) {
        const std::string flags = s.value("flags", Json::array()).dump();
        const bool is_compressed = flags.find("compressed") != std::string::npos;
        const bool is_sparse = flags.find("sparse") != std::string::npos;
        // The attribute-list pair: runs by the hundred, spilled into extension records.
        const bool spilled = s["fragments"].get<std::uint64_t>() > 100;
        if (is_compressed || is_sparse || spilled) specials.insert(s["mft_record"].get<std::uint64_t>());
        compressed += is_compressed ? 1 : 0;
        sparse += is_sparse ? 1 : 0;
    }
    CHECK(compressed == (cluster <= 4096 ? 2u : 0u));
    CHECK(sparse >= 1);
    std::size_t with_list = 0;
    for (const std::uint64_t record : specials) {
        const std::string istat = test::run({"istat", image.string(), std::to_string(record)}).out;
        if (istat.find("Type: $ATTRIBUTE_LIST") != std::string::npos) ++with_list;
    }
    CHECK(with_list >= 1);  // the pair: at some cluster sizes one of them just fits its record
    for (const Strategy strategy : kStrategies) {
        const std::size_t moves =
            plan_apply_prove(image, input, std::string(strategy_name(strategy)), specials);
        if (strategy == Strategy::Optimize) CHECK(moves > 0);  // every volume here is fragmented
    }
}

}  // namespace

TEST_CASE("apply carries out every move of every strategy: 512-byte clusters", "[apply][matrix]") {
    run_matrix(512);
}
TEST_CASE("apply carries out every move of every strategy: 1 KiB clusters", "[apply][matrix]") {
    run_matrix(1024);
}
TEST_CASE("apply carries out every move of every strategy: 2 KiB clusters", "[apply][matrix]") {
    run_matrix(2048);
}
TEST_CASE("apply carries out every move of every strategy: 4 KiB clusters", "[apply][matrix]") {
    run_matrix(4096);
}
TEST_CASE("apply carries out every move of every strategy: 8 KiB clusters", "[apply][matrix]") {
    run_matrix(8192);
}
TEST_CASE("apply carries out every move of every strategy: 16 KiB clusters", "[apply][matrix]") {
    run_matrix(16384);
}
TEST_CASE("apply carries out every move of every strategy: 32 KiB clusters", "[apply][matrix]") {
    run_matrix(32768);
}
TEST_CASE("apply carries out every move of every strategy: 64 KiB clusters", "[apply][matrix]") {
    run_matrix(65536);
}
