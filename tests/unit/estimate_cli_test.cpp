// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag estimate` as users' scripts see it: the guestfrag.estimate.v1 contract
// (docs/design.md §4) on a generated image, with figures recomputed independently from the volume
// map the analysis reads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzers/analysis.hpp"
#include "core/estimate/histogram.hpp"
#include "core/image/open_image.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
using Json = nlohmann::json;

namespace {

std::uint64_t sum(const Json& counts) {
    std::uint64_t total = 0;
    for (const Json& c : counts) total += c.get<std::uint64_t>();
    return total;
}

/// Bytes a front-to-back read of `s` covers, recomputed from its runs without the IO
/// generator: each allocated run clipped to [0, size rounded up to 512).
std::uint64_t bytes_read(const Stream& s, std::uint64_t cluster_size) {
    const std::uint64_t end = (s.size + 511) / 512 * 512;
    std::uint64_t total = 0;
    for (const Extent& e : s.extents) {
        if (e.lcn < 0) continue;
        const std::uint64_t from = static_cast<std::uint64_t>(e.vcn) * cluster_size;
        const std::uint64_t to = std::min(static_cast<std::uint64_t>(e.vcn + e.clusters) * cluster_size, end);
        if (to > from) total += to - from;
    }
    return total;
}

/// Checks one "R" object against the contract's shape and its internal consistency.
void check_report(const Json& r) {
    for (const char* key : {"ios", "mean_io_bytes", "sequential_percent", "device_seconds", "histograms"})
        REQUIRE(r.contains(key));
    for (const char* key : {"hdd", "ssd", "array"}) CHECK(r["device_seconds"][key].get<double>() >= 0);
    const Json& len = r["histograms"]["ioLength"];
    const Json& seek = r["histograms"]["seekDistance"];
    const std::vector<std::int64_t> len_limits(io_length_limits().begin(), io_length_limits().end());
    const std::vector<std::int64_t> seek_limits(seek_distance_limits().begin(), seek_distance_limits().end());
    CHECK(len["limits"].get<std::vector<std::int64_t>>() == len_limits);
    CHECK(seek["limits"].get<std::vector<std::int64_t>>() == seek_limits);
    CHECK(len["counts"].size() == len["limits"].size() + 1);
    CHECK(seek["counts"].size() == seek["limits"].size() + 1);
    const auto ios = r["ios"].get<std::uint64_t>();
    CHECK(sum(len["counts"]) == ios);
    if (ios > 0) CHECK(sum(seek["counts"]) + 1 == ios);
    // The bucket of distance +1 (index 17) holds exactly the sequential IOs.
    if (ios > 1)
        CHECK(r["sequential_percent"].get<double>() ==
              Approx(100.0 * seek["counts"][17].get<double>() / static_cast<double>(ios - 1)));
    if (ios > 0)
        CHECK(r["mean_io_bytes"].get<double>() ==
              Approx(r["bytes"].get<double>() / static_cast<double>(ios)));
}

}  // namespace

TEST_CASE("estimate --json follows guestfrag.estimate.v1 for a scan", "[cli][json][estimate]") {
    const auto image = test::small_cli_image();
    // The raw guest: file extents as they are (docs/estimate.md §1), which the byte count
    // below is worked out from.
    const auto r = test::run_cli({"estimate", image.string(), "--json", "--guest", "raw"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    CHECK(doc["schema"] == "guestfrag.estimate.v1");
    CHECK(doc["workload"] == "scan");
    CHECK(doc["max_io"] == 1048576);
    CHECK(doc["guest"] == Json{{"profile", "raw"}, {"read_ahead", 0}, {"reader", nullptr}});
    REQUIRE(doc["volumes"].size() == 1);
    const Json& v = doc["volumes"][0];
    CHECK(v["partition"] == 1);
    CHECK_FALSE(v.contains("after"));
    check_report(v["before"]);

    // Independently: the bytes every non-resident $DATA stream with size > 0 covers, and a
    // lower bound on the IOs (one per stream with data below its size).
    const auto disk = open_image(image.string());
    const ImageAnalysis a = analyze_image(*disk);
    const VolumeMap& m = a.volumes[0].map;
    std::uint64_t bytes = 0;
    std::uint64_t streams_with_data = 0;
    for (const Stream& s : m.streams) {
        if (s.type != static_cast<std::uint32_t>(AttrType::Data) || s.size == 0) continue;
        const std::uint64_t b = bytes_read(s, m.cluster_size);
        bytes += b;
        if (b > 0) ++streams_with_data;
    }
    CHECK(v["before"]["bytes"] == bytes);
    CHECK(v["before"]["ios"].get<std::uint64_t>() >= streams_with_data);

    // Smaller IOs: the same bytes in at least as many IOs, none above 4 KiB.
    const auto small =
        test::run_cli({"estimate", image.string(), "--json", "--max-io", "4K", "--guest", "raw"});
    REQUIRE(small.status == 0);
    const Json s = Json::parse(small.out)["volumes"][0]["before"];
    check_report(s);
    CHECK(s["bytes"] == bytes);
    CHECK(s["ios"].get<std::uint64_t>() >= v["before"]["ios"].get<std::uint64_t>());
    const Json& counts = s["histograms"]["ioLength"]["counts"];
    for (std::size_t i = 5; i < counts.size(); ++i) CHECK(counts[i] == 0);  // buckets above 4096

    // A guest reads whole 4 KiB pages, $MFT records and what its read-ahead brings in: at
    // least the raw bytes rounded up to pages, and every IO a whole number of pages.
    for (const char* guest : {"windows", "linux-ntfs3g", "linux-ntfs3"}) {
        INFO(guest);
        const auto g = test::run_cli({"estimate", image.string(), "--json", "--guest", guest});
        REQUIRE(g.status == 0);
        const Json gd = Json::parse(g.out);
        CHECK(gd["guest"]["profile"] == guest);
        CHECK(gd["guest"]["read_ahead"] == 131072);
        CHECK(gd["guest"]["reader"] == (guest == std::string("windows") ? Json() : Json("cat")));
        const Json& gb = gd["volumes"][0]["before"];
        check_report(gb);
        CHECK(gb["bytes"].get<std::uint64_t>() > bytes);
        CHECK(gb["bytes"].get<std::uint64_t>() % 4096 == 0);
        const Json& glen = gb["histograms"]["ioLength"]["counts"];
        for (std::size_t i = 0; i < 4; ++i) CHECK(glen[i] == 0);  // buckets below 4096
    }
    // Read-ahead 0: every page its own IO, so IOs = bytes / 4096.
    const auto off =
        test::run_cli({"estimate", image.string(), "--json", "--guest", "linux-ntfs3g", "--read-ahead", "0"});
    REQUIRE(off.status == 0);
    const Json ob = Json::parse(off.out)["volumes"][0]["before"];
    CHECK(ob["ios"].get<std::uint64_t>() * 4096 == ob["bytes"].get<std::uint64_t>());
    // Unknown profiles and windows that are no whole pages are usage errors.
    CHECK(test::run_cli({"estimate", image.string(), "--guest", "linux"}).status == 1);
    CHECK(test::run_cli({"estimate", image.string(), "--guest", "raw", "--read-ahead", "1000"}).status == 1);
    CHECK(test::run_cli({"estimate", image.string(), "--read-ahead", "lots"}).status == 1);
    // tar's short first reads open smaller windows than cat's: more IOs for the same data
    // in ntfs3's file caches; in FUSE's under ntfs-3g other IOs (the disk's read-ahead,
    // running on past each file, joins some of them: guest_model_test has worked cases).
    for (const char* guest : {"linux-ntfs3", "linux-ntfs3g"}) {
        INFO(guest);
        const auto tar =
            test::run_cli({"estimate", image.string(), "--json", "--guest", guest, "--reader", "tar"});
        REQUIRE(tar.status == 0);
        const Json td = Json::parse(tar.out);
        CHECK(td["guest"]["reader"] == "tar");
        const auto cat = test::run_cli({"estimate", image.string(), "--json", "--guest", guest});
        const Json cd = Json::parse(cat.out);
        CHECK(td["volumes"][0]["before"]["bytes"] >= cd["volumes"][0]["before"]["bytes"]);
        if (guest == std::string("linux-ntfs3"))
            CHECK(td["volumes"][0]["before"]["ios"] > cd["volumes"][0]["before"]["ios"]);
        else
            CHECK(td["volumes"][0]["before"]["ios"] != cd["volumes"][0]["before"]["ios"]);
    }
    // Windows' cache manager reads its files itself; no such reader.
    const auto own = test::run_cli({"estimate", image.string(), "--guest", "windows", "--reader", "tar"});
    CHECK(own.status == 1);
    CHECK(own.err.find("only the Linux guests take a reader") != std::string::npos);
    CHECK(test::run_cli({"estimate", image.string(), "--guest", "linux-ntfs3", "--reader", "dd"}).status ==
          1);
}

TEST_CASE("estimate text output shows totals and histograms", "[cli][estimate]") {
    const auto image = test::small_cli_image();
    const auto r = test::run_cli({"estimate", image.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("Workload") != std::string::npos);
    CHECK(r.out.find("Sequential") != std::string::npos);
    CHECK(r.out.find("HDD time") != std::string::npos);
    CHECK(r.out.find("IO length") != std::string::npos);
    CHECK(r.out.find("<= 524288") != std::string::npos);
    CHECK(r.out.find("> 500000") != std::string::npos);
}

TEST_CASE("estimate write:N and trace:FILE", "[cli][json][estimate]") {
    const auto image = test::small_cli_image();

    const auto w = test::run_cli({"estimate", image.string(), "--json", "--workload", "write:40"});
    INFO(w.err);
    REQUIRE(w.status == 0);
    const Json wd = Json::parse(w.out);
    CHECK(wd["workload"] == "write:40");
    const Json& wr = wd["volumes"][0]["before"];
    check_report(wr);
    CHECK(wr["write"]["files"] == 40);
    CHECK(wr["write"]["files_written"] == 40);
    CHECK(wr["ios"].get<std::uint64_t>() >= 40);
    CHECK(wr["write"]["fragments"].get<std::uint64_t>() >= 40);

    // A trace of three real files (read twice in part) and one that does not exist.
    const auto disk = open_image(image.string());
    const ImageAnalysis a = analyze_image(*disk);
    const VolumeMap& m = a.volumes[0].map;
    std::vector<const Stream*> picked;
    for (const Stream& s : m.streams)
        if (s.type == static_cast<std::uint32_t>(AttrType::Data) && s.name.empty() && s.size > 0 &&
            s.placement == Placement::Movable && picked.size() < 3)
            picked.push_back(&s);
    REQUIRE(picked.size() == 3);
    const auto list = test::scratch_dir() / "estimate-trace.txt";
    {
        std::ofstream out(list);
        out << m.path_of(picked[0]->mft_record) << '\n'
            << "\\no\\such\\file.txt\n"
            << m.path_of(picked[1]->mft_record) << '\n'
            << m.path_of(picked[2]->mft_record) << '\n'
            << m.path_of(picked[0]->mft_record) << '\n';
    }
    const auto t =
        // raw: a guest would find the file named twice cached the second time.
        test::run_cli(
            {"estimate", image.string(), "--json", "--workload", "trace:" + list.string(), "--guest", "raw"});
    INFO(t.err);
    REQUIRE(t.status == 0);
    const Json td = Json::parse(t.out);
    const Json& tv = td["volumes"][0];
    CHECK(tv["trace"]["paths"] == 5);
    CHECK(tv["trace"]["read"] == 4);
    CHECK(tv["trace"]["missing"] == 1);
    CHECK(tv["trace"]["missing_paths"] == Json::array({"\\no\\such\\file.txt"}));
    check_report(tv["before"]);
    const std::uint64_t expected = 2 * bytes_read(*picked[0], m.cluster_size) +
                                   bytes_read(*picked[1], m.cluster_size) +
                                   bytes_read(*picked[2], m.cluster_size);
    CHECK(tv["before"]["bytes"] == expected);
}

TEST_CASE("estimate --plan reports the volume before and after the plan", "[cli][json][estimate][plan]") {
    const auto image = test::small_cli_image();
    const auto disk = open_image(image.string());
    const ImageAnalysis a = analyze_image(*disk);
    const VolumeMap& m = a.volumes[0].map;

    // A hand-made plan: move the most fragmented movable $DATA stream of at most 1 MiB and
    // without holes (which would still cut its reads) into the first free extent outside
    // the MFT zone that holds it whole.
    const Stream* target = nullptr;
    for (const Stream& s : m.streams)
        if (s.type == static_cast<std::uint32_t>(AttrType::Data) && s.placement == Placement::Movable &&
            s.fragments() > 1 && bytes_read(s, m.cluster_size) <= (1u << 20) &&
            std::none_of(s.extents.begin(), s.extents.end(), [](const Extent& e) { return e.lcn < 0; }) &&
            (target == nullptr || s.fragments() > target->fragments()))
            target = &s;
    REQUIRE(target != nullptr);
    const std::int64_t need = target->allocated_clusters();
    std::int64_t dest = -1;
    for (const auto& interval : m.free - m.mft_zone - m.unmovable)
        if (boost::icl::length(interval) >= need) {
            dest = boost::icl::first(interval);
            break;
        }
    REQUIRE(dest >= 0);
    Plan plan;
    plan.identity = identify(m, disk->path(), disk->size());
    plan.strategy = "defrag";
    std::int64_t offset = 0;
    for (const Extent& e : target->extents) {
        if (e.lcn < 0) continue;
        plan.moves.push_back(
            Move{target->mft_record, target->label(), e.vcn, e.lcn, dest + offset, e.clusters});
        offset += e.clusters;
    }
    const auto plan_path = test::scratch_dir() / "estimate-plan.json";
    {
        std::ofstream out(plan_path);
        out << plan_to_json(plan, m);
    }

    const auto r = test::run_cli({"estimate", image.string(), "--json", "--plan", plan_path.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    const Json& v = doc["volumes"][0];
    REQUIRE(v.contains("after"));
    check_report(v["before"]);
    check_report(v["after"]);
    // Moving data changes where it is read, never how much.
    CHECK(v["after"]["bytes"] == v["before"]["bytes"]);
    // The moved stream is one extent now, read in one IO (it is at most 1 MiB); before, it
    // took one IO per piece: a maximal VCN-consecutive, LCN-contiguous stretch of runs
    // holding data below its size. Every other stream reads as before.
    const std::uint64_t end = (target->size + 511) / 512 * 512;
    std::uint64_t pieces = 0;
    const Extent* last = nullptr;
    for (const Extent& e : target->extents) {
        if (e.lcn < 0) {
            last = nullptr;
            continue;
        }
        const bool continues =
            last != nullptr && e.vcn == last->vcn + last->clusters && e.lcn == last->lcn + last->clusters;
        if (!continues && static_cast<std::uint64_t>(e.vcn) * m.cluster_size < end) ++pieces;
        last = &e;
    }
    REQUIRE(pieces >= 2);
    CHECK(v["after"]["ios"].get<std::uint64_t>() + pieces - 1 == v["before"]["ios"].get<std::uint64_t>());

    // The plan names its partition; another one is refused.
    const auto other =
        test::run_cli({"estimate", image.string(), "--plan", plan_path.string(), "--partition", "2"});
    CHECK(other.status == 2);
    CHECK(other.err.find("partition 1") != std::string::npos);

    // A plan for another state of the volume is refused.
    plan.identity.allocation_digest ^= 1;
    const auto stale_path = test::scratch_dir() / "estimate-plan-stale.json";
    {
        std::ofstream out(stale_path);
        out << plan_to_json(plan, m);
    }
    const auto stale = test::run_cli({"estimate", image.string(), "--plan", stale_path.string()});
    CHECK(stale.status == 2);
    CHECK(stale.err.find("guestfrag: error: " + stale_path.string() + ":") == 0);
}

TEST_CASE("estimate refuses bad options and inputs", "[cli][estimate]") {
    const auto image = test::small_cli_image();
    CHECK(test::run_cli({"estimate", image.string(), "--max-io", "1000"}).status == 1);
    CHECK(test::run_cli({"estimate", image.string(), "--max-io", "lots"}).status == 1);
    CHECK(test::run_cli({"estimate", image.string(), "--workload", "read"}).status == 1);
    CHECK(test::run_cli({"estimate", image.string(), "--workload", "write:0"}).status == 1);
    CHECK(test::run_cli({"estimate", image.string(), "--partition", "1", "--json"}).status == 0);
    const auto no_partition = test::run_cli({"estimate", image.string(), "--partition", "7"});
    CHECK(no_partition.status == 2);
    CHECK(no_partition.err.find("guestfrag: error: " + image.string() + ":") == 0);
    const auto missing =
        test::run_cli({"estimate", image.string(), "--workload", "trace:/nonexistent/list.txt"});
    CHECK(missing.status == 2);
    CHECK(missing.err.find("guestfrag: error: ") == 0);
}

TEST_CASE("estimate install:N reports its files and refuses bad options", "[cli][json][estimate][install]") {
    const auto image = test::small_cli_image();

    const auto r = test::run_cli({"estimate", image.string(), "--json", "--workload", "install:40,writers=3,chunk=8k"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json d = Json::parse(r.out);
    CHECK(d["workload"] == "install:40,writers=3,chunk=8k");
    const Json& before = d["volumes"][0]["before"];
    check_report(before);
    CHECK(before["write"]["files"] == 40);
    CHECK(before["write"]["files_written"] == 40);
    CHECK(before["write"]["fragments"].get<std::uint64_t>() >= 40);
    // Every write appends at most 8 KiB: at least one IO per 8 KiB written, all writes.
    const std::uint64_t bytes = before["write"]["bytes_written"];
    CHECK(before["ios"].get<std::uint64_t>() >= bytes / 8192);
    CHECK(before["writes"] == before["ios"]);

    const auto text = test::run_cli({"estimate", image.string(), "--workload", "install:40"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("install:40") != std::string::npos);
    CHECK(text.out.find("New files (before)") != std::string::npos);

    // A usage error, as fio's: one line naming the option (then CLI11's pointer to --help).
    for (const auto& [bad, named] :
         {std::pair{"install:40,chunk=1000", "install option 'chunk': must be a positive multiple of 512"},
          {"install:40,writers=65", "install option 'writers': must be 1 to 64"},
          {"install:40,depth=2", "install option 'depth': unknown"},
          {"install:0", "install workload needs a file count"},
          // The volume's files in 512-byte writes: more than 10,000,000 writes.
          {"install:10000000,chunk=512", "install option 'chunk': 10000000 files of the volume's sizes take"}}) {
        const auto refused = test::run_cli({"estimate", image.string(), "--workload", bad});
        INFO(bad << ": " << refused.err);
        CHECK(refused.status == 1);
        const std::string first = refused.err.substr(0, refused.err.find('\n'));
        CHECK(first.find(named) != std::string::npos);
    }
}

TEST_CASE("estimate summarises ten million fio IOs in bounded memory", "[cli][json][estimate][fio][memory]") {
    // The documented maximum of one job. Held as a list, the IOs alone took 240 MB; summarised
    // as they are made, the run needs the histograms and the written map only.
    const auto image = test::small_cli_image();
    const auto r = test::run_cli_measured({"estimate", image.string(), "--json", "--workload",
                                           "fio:rw=randwrite,bs=4k,size=4m,number_ios=10000000"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json before = Json::parse(r.out)["volumes"][0]["before"];
    CHECK(before["ios"] == 10'000'000);
    CHECK(before["writes"] == 10'000'000);
    CHECK(r.input_rss_kib <= 128 * 1024);
}
