// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag analyze` as users' scripts see it: the guestfrag.analysis.v1 contract.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"
#include "app/cli/analysis_json.hpp"
#include "core/image/open_image.hpp"
#include "pipeline/pipeline.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
using Json = nlohmann::json;

namespace {

MkImageOptions tiny_gpt() {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = "gpt";
    o.files = 200;
    o.seed = 5;
    return o;
}

/// The --files document as one tree dumped at once, each stream built as the contract
/// (docs/design.md §6) lists its fields: what `analyze` wrote before it wrote streams one
/// at a time.
std::string whole_document(const ImageAnalysis& a) {
    using Ordered = nlohmann::ordered_json;
    Ordered doc = cli::analysis_to_json(a);
    for (std::size_t i = 0; i < a.volumes.size(); ++i) {
        const VolumeMap& map = a.volumes[i].map;
        Ordered streams = Ordered::array();
        for (const Stream& s : map.streams) {
            Ordered extents = Ordered::array();
            for (const Extent& e : s.extents) extents.push_back(Ordered::array({e.vcn, e.lcn, e.clusters}));
            Ordered j = {{"mft_record", s.mft_record},
                         {"path", map.path_of(s.mft_record)},
                         {"stream", s.label()},
                         {"size", s.size},
                         {"allocated_size", s.allocated_size},
                         {"fragments", s.fragments()},
                         {"flags", Ordered::array()},
                         {"placement", s.placement == Placement::Movable     ? "movable"
                                       : s.placement == Placement::Unmovable ? "unmovable"
                                                                             : "excluded"},
                         {"extents", std::move(extents)}};
            if (s.flags & Stream::kCompressed) j["flags"].push_back("compressed");
            if (s.flags & Stream::kEncrypted) j["flags"].push_back("encrypted");
            if (s.flags & Stream::kSparse) j["flags"].push_back("sparse");
            if (!s.reason.empty()) j["reason"] = s.reason;
            streams.push_back(std::move(j));
        }
        doc["volumes"][i]["streams"] = std::move(streams);
    }
    return doc.dump(2) + "\n";
}

}  // namespace

TEST_CASE("analyze --json --files follows guestfrag.analysis.v1", "[cli][json]") {
    const auto image = test::generated_image("tiny-gpt", tiny_gpt());
    const auto r = test::run_cli({"analyze", image.string(), "--json", "--files"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    CHECK(doc["schema"] == "guestfrag.analysis.v1");
    CHECK(doc["image"]["path"] == image.string());
    CHECK(doc["image"]["format"] == "raw");
    CHECK(doc["image"]["virtual_size"] == std::filesystem::file_size(image));
    REQUIRE(doc["image"]["layers"].size() == 1);
    CHECK(doc["image"]["layers"][0]["depth"] == 0);
    CHECK(doc["image"]["layers"][0]["granule_size"].get<std::uint64_t>() > 0);

    // The same numbers as the core computes, field by field.
    const auto disk = open_image(image.string());
    const ImageAnalysis a = analyze_image(*disk);
    REQUIRE(doc["partitions"].size() == a.table.partitions.size());
    CHECK(doc["partitions"][0]["start"] == a.table.partitions[0].start);
    CHECK(doc["partitions"][0]["length"] == a.table.partitions[0].length);
    CHECK(doc["partitions"][0]["filesystem"] == "ntfs");
    REQUIRE(doc["volumes"].size() == 1);
    const Json& v = doc["volumes"][0];
    const VolumeAnalysis& va = a.volumes[0];
    CHECK(v["partition"] == va.map.partition);
    CHECK(v["cluster_size"] == va.map.cluster_size);
    CHECK(v["total_clusters"] == va.map.total_clusters);
    CHECK(v["free_clusters"] == va.map.free_clusters());
    CHECK(v["files"]["count"] == va.files.files);
    CHECK(v["files"]["fragmented"] == va.files.fragmented_files);
    CHECK(v["files"]["fragments"] == va.files.fragments);
    CHECK(v["files"]["excess_fragments"] == va.files.excess_fragments);
    CHECK(v["files"]["fragmented_bytes"] == va.files.fragmented_bytes);
    CHECK(v["files"]["fragmentation_percent"].get<double>() == Approx(va.files.fragmentation_percent));
    CHECK(v["free_space"]["extents"] == va.free_space.extents);
    CHECK(v["free_space"]["largest_extent_clusters"] == va.free_space.largest_extent_clusters);
    CHECK(v["free_space"]["fragmentation_percent"].get<double>() == Approx(va.free_space.fragmentation_percent));
    CHECK(v["mft"]["records_in_use"] == va.map.mft_records_in_use);
    CHECK(v["mft"]["fragments"] == va.files.mft_fragments);

    // Streams: every non-resident attribute, [vcn, lcn, clusters] runs tiling the VCNs.
    REQUIRE(v["streams"].size() == va.map.streams.size());
    std::uint64_t fragments = 0;
    for (const Json& s : v["streams"]) {
        REQUIRE(s.contains("mft_record"));
        REQUIRE(s["path"].get<std::string>().starts_with("\\"));
        REQUIRE_FALSE(s["stream"].get<std::string>().empty());
        std::int64_t vcn = 0;
        for (const Json& e : s["extents"]) {
            REQUIRE(e.size() == 3);
            CHECK(e[0] == vcn);
            vcn += e[2].get<std::int64_t>();
        }
        fragments += s["fragments"].get<std::uint64_t>();
    }
    CHECK(fragments == va.files.fragments);
}

TEST_CASE("analyze --json --files writes each stream as it goes and prints what the whole document dumps", "[cli][json]") {
    // The bundled real images, and a generated one with compressed and sparse streams.
    MkImageOptions packed = tiny_gpt();
    packed.compressed = true;
    std::uint16_t flags = 0;
    bool reasons = false;
    for (const std::filesystem::path& image :
         {test::testdata("dftt-10-ntfs-disk.dd.xz"), test::testdata("windows_volume.qcow2"),
          test::generated_image("tiny-gpt-compressed", packed)}) {
        INFO(image);
        const OpenedImage opened = open_and_analyze(image.string());
        ImageAnalysis a = *opened.analysis;
        REQUIRE(!a.volumes.empty());
        REQUIRE(!a.volumes.front().map.streams.empty());
        for (const VolumeAnalysis& v : a.volumes)
            for (const Stream& s : v.map.streams) {
                flags |= s.flags;
                reasons = reasons || !s.reason.empty();
            }
        const std::string whole = whole_document(a);
        const auto r = test::run_cli({"analyze", image.string(), "--json", "--files", "--no-verdict"});
        REQUIRE(r.status == 0);
        CHECK(r.out == whole);
        // A label that reads as the writer's marker moves the marker, not the cut.
        a.volumes.front().map.label = "\x01streamed 0/0";
        std::ostringstream out;
        cli::write_analysis_json(out, a, true);
        CHECK(out.str() == whole_document(a));
    }
    CHECK((flags & Stream::kCompressed) != 0);
    CHECK((flags & Stream::kSparse) != 0);
    CHECK(reasons);
}

TEST_CASE("analyze without --files omits streams and the text report names the volume", "[cli]") {
    const auto image = test::generated_image("tiny-gpt", tiny_gpt());
    const auto json = test::run_cli({"analyze", image.string(), "--json"});
    REQUIRE(json.status == 0);
    CHECK_FALSE(Json::parse(json.out)["volumes"][0].contains("streams"));
    const auto text = test::run_cli({"analyze", image.string()});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("Partitions (gpt)") != std::string::npos);
    CHECK(text.out.find("File fragmentation") != std::string::npos);
    CHECK(text.out.find("Free-space fragmentation") != std::string::npos);
    CHECK(text.err.empty());  // no progress noise when stderr is not a terminal
}

TEST_CASE("usage errors exit 1, --version exits 0", "[cli]") {
    CHECK(test::run_cli({"analyze"}).status == 1);
    CHECK(test::run_cli({"analyze", "x.img", "--no-such-flag"}).status == 1);
    CHECK(test::run_cli({"frobnicate"}).status == 1);
    const auto v = test::run_cli({"--version"});
    CHECK(v.status == 0);
    CHECK(v.out.find("guestfrag") != std::string::npos);
}
