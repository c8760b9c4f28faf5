// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag impact` against independent oracles: growth from `qemu-img map` granule counts,
// the deep dedup census from a copy of the disk with the moves carried out byte by byte,
// VSS stores written with libntfs-3g, alignment from `mmls`.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"
#include "support/ntfs_edit.hpp"
#include "support/qemu_tools.hpp"
#include "support/tsk_oracle.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

Json run_json(const std::vector<std::string>& args) {
    const auto r = test::run_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return Json::parse(r.out);
}

/// Makes a plan file for `image` and returns its JSON document.
Json make_plan(const fs::path& image, const fs::path& plan, const std::string& strategy = "defrag") {
    return run_json({"plan", image.string(), "--strategy", strategy, "-o", plan.string(), "--json"});
}

Json impact(const fs::path& image, const fs::path& plan, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"impact", image.string(), "--plan", plan.string(), "--json"};
    args.insert(args.end(), more.begin(), more.end());
    return run_json(args);
}

/// Disk byte ranges [lo, hi) the plan's moves write, from the plan file and the analysis.
std::vector<std::pair<std::uint64_t, std::uint64_t>> destinations(const Json& plan, std::uint64_t partition_start,
                                                                  std::uint64_t cluster_size) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (const Json& m : plan["moves"]) {
        const std::uint64_t lo = partition_start + m["to_lcn"].get<std::uint64_t>() * cluster_size;
        out.emplace_back(lo, lo + m["clusters"].get<std::uint64_t>() * cluster_size);
    }
    return out;
}

struct Growth {
    std::uint64_t thin = 0;
    std::uint64_t clone_delta = 0;
};

/// docs/design.md §5 growth counted from `qemu-img map`: each granule written counts once; it costs
/// nothing when the top layer (depth 0) has data in it, a copy-on-write when only a deeper
/// layer has, thin growth otherwise.
Growth expected_growth(const fs::path& image, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& writes,
                       std::uint64_t granule) {
    std::set<std::uint64_t> top;
    std::set<std::uint64_t> parent;
    for (const test::QemuExtent& e : test::qemu_map(image)) {
        if (!e.data) continue;
        for (std::uint64_t g = e.start / granule; g * granule < e.start + e.length; ++g)
            (e.depth == 0 ? top : parent).insert(g);
    }
    std::set<std::uint64_t> written;
    for (const auto& [lo, hi] : writes)
        for (std::uint64_t g = lo / granule; g * granule < hi; ++g) written.insert(g);
    Growth out;
    for (const std::uint64_t g : written) {
        if (top.contains(g)) continue;
        (parent.contains(g) ? out.clone_delta : out.thin) += granule;
    }
    return out;
}

const Json& warning(const Json& doc, const std::string& code) {
    for (const Json& w : doc["warnings"])
        if (w["code"] == code) return w;
    FAIL("no warning " << code << " in " << doc["warnings"].dump());
    return doc;  // not reached
}

bool has_warning(const Json& doc, const std::string& code) {
    for (const Json& w : doc["warnings"])
        if (w["code"] == code) return true;
    return false;
}

/// Offload commands of a full copy at 4 MiB transfers in `state` ("now", "after_plan",
/// "relaid") of an impact document's copy states, which must sit beside the full figures.
std::uint64_t copy_commands(const Json& doc, const std::string& state) {
    const Json& copy = doc["copy"];
    REQUIRE(copy["reference_transfer_size"] == 4u << 20);
    for (const Json& row : copy["states"]) {
        if (row["transfer_size"] != 4u << 20) continue;
        // The table is the full figures side by side.
        for (const Json& f : copy[state == "now" ? "now" : "after_plan"]["offload"])
            if (f["transfer_size"] == 4u << 20)
                CHECK(row[state]["commands"] == f[state == "relaid" ? "relaid" : "now"]["commands"]);
        return row[state]["commands"].get<std::uint64_t>();
    }
    FAIL("no copy state at 4 MiB");
    return 0;
}

/// The advice codes of an impact document's copy states.
std::vector<std::string> advice_codes(const Json& doc) {
    std::vector<std::string> codes;
    for (const Json& a : doc["copy"]["advice"]) codes.push_back(a["code"]);
    return codes;
}

fs::path small_disk(const std::string& key, std::uint32_t seed, std::string table = "msdos",
                    std::uint32_t cluster = 4096) {
    MkImageOptions o;
    o.disk_size = 48ull << 20;
    o.files = 300;
    o.seed = seed;
    o.table = std::move(table);
    o.cluster_size = cluster;
    return test::generated_image(key, o);
}

}  // namespace

TEST_CASE("impact growth on linked clones and thin disks equals granule counts from qemu-img map",
          "[impact][formats]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const fs::path raw = small_disk("impact-growth", 23);
    const test::WorkDir dir("impact-growth");
    const Json analysis = run_json({"analyze", raw.string(), "--json"});
    const std::uint64_t start = analysis["partitions"][0]["start"];
    const std::uint64_t cluster = analysis["volumes"][0]["cluster_size"];

    struct Case {
        std::string name, format;
        bool clone;
    };
    for (const Case& c : {Case{"qcow2 clone", "qcow2", true}, Case{"vmdk clone", "vmdk", true},
                          Case{"qcow2 thin", "qcow2", false}, Case{"vmdk thin", "vmdk", false}}) {
        SECTION(c.name) {
            const fs::path base = dir / ("base." + c.format);
            const fs::path top = dir / ("top." + c.format);
            test::run_ok({"qemu-img", "convert", "-f", "raw", "-O", c.format, raw.string(),
                          (c.clone ? base : top).string()});
            if (c.clone) {
                test::run_ok({"qemu-img", "create", "-q", "-f", c.format, "-b", base.filename().string(), "-F",
                              c.format, top.string()});
                // The clone's own data: a guest write into the volume after cloning.
                test::qemu_io(top, c.format, {"write -P 0x5a 8M 2M"});
            }
            const fs::path plan_path = dir / (c.format + (c.clone ? ".clone" : ".thin") + ".plan.json");
            const Json plan = make_plan(top, plan_path, "optimize");
            REQUIRE(!plan["moves"].empty());
            const std::uint64_t granule = plan["summary"]["granule_size"];
            CHECK(granule == 64 * 1024);
            const Growth expected = expected_growth(top, destinations(plan, start, cluster), granule);
            const Json doc = impact(top, plan_path);
            CHECK(doc["schema"] == "guestfrag.impact.v1");
            const Json& f = doc["figures"];
            CHECK(f["thin_growth_bytes"] == expected.thin);
            CHECK(f["clone_delta_growth_bytes"] == expected.clone_delta);
            // The plan's summary and impact use one growth model.
            CHECK(f["thin_growth_bytes"] == plan["summary"]["thin_growth_bytes"]);
            CHECK(f["clone_delta_growth_bytes"] == plan["summary"]["clone_delta_growth_bytes"]);
            CHECK(f["reclaimable_bytes_before"] == plan["summary"]["reclaimable_bytes_before"]);
            CHECK(f["reclaimable_bytes_after"] == plan["summary"]["reclaimable_bytes_after"]);
            CHECK(expected.thin > 0);
            CHECK(has_warning(doc, "THIN_GROWTH"));
            // The container appends what the plan writes new: a full copy needs more
            // offload commands after the plan than now (docs/copy.md §7).
            const Json top_analysis = run_json({"analyze", top.string(), "--json"});
            CHECK(doc["copy"]["now"]["offload"] == top_analysis["image"]["copy"]["chain"]["offload"]);
            const std::uint64_t now = copy_commands(doc, "now"), grown = copy_commands(doc, "after_plan");
            CHECK(grown > now);
            CHECK(copy_commands(doc, "relaid") <= grown);
            if (10 * grown >= 11 * now)
                CHECK(advice_codes(doc) == std::vector<std::string>{"COPY_PLAN_SCATTERS"});
            if (c.clone) {
                CHECK(expected.clone_delta > 0);
                CHECK(has_warning(doc, "CLONE_DELTA_GROWTH"));
                const std::string shared = warning(doc, "SHARED_BASE_IMAGE")["message"];
                CHECK(shared.find("base." + c.format) != std::string::npos);
                // It agrees with the growth figures: the copied data grows the delta.
                CHECK(shared.find(", the delta growing by ") != std::string::npos);
                CHECK(f["clone"]["parent_layers"] == 1);
                CHECK(f["clone"]["sharing_lost_bytes"].get<std::uint64_t>() > 0);
            } else {
                CHECK(expected.clone_delta == 0);
                CHECK_FALSE(has_warning(doc, "SHARED_BASE_IMAGE"));
            }
            // thin-safe: impact agrees that nothing grows.
            const fs::path safe_path = dir / (c.format + (c.clone ? ".clone" : ".thin") + ".safe.json");
            make_plan(top, safe_path, "thin-safe");
            const Json safe = impact(top, safe_path);
            CHECK(safe["figures"]["thin_growth_bytes"] == 0);
            CHECK(safe["figures"]["clone_delta_growth_bytes"] == 0);
            CHECK_FALSE(has_warning(safe, "THIN_GROWTH"));
            // ...and the copies cost what they cost now.
            CHECK(copy_commands(safe, "after_plan") == copy_commands(safe, "now"));
            CHECK(safe["copy"]["now"]["offload"] == doc["copy"]["now"]["offload"]);
            for (const std::string& code : advice_codes(safe)) CHECK(code != "COPY_PLAN_SCATTERS");
        }
    }
}

namespace {

/// Distinct contents of `chunk`-byte chunks of a file (the last may be short), and how many.
std::pair<std::uint64_t, std::uint64_t> distinct_chunks(const fs::path& path, std::uint64_t chunk) {
    std::ifstream in(path, std::ios::binary);
    std::unordered_set<std::string> seen;
    std::uint64_t chunks = 0;
    std::string buffer(chunk, '\0');
    while (in.read(buffer.data(), static_cast<std::streamsize>(chunk)) || in.gcount() > 0) {
        seen.insert(buffer.substr(0, static_cast<std::size_t>(in.gcount())));
        ++chunks;
    }
    return {seen.size(), chunks};
}

/// Carries out the plan's moves on a copy of the raw disk, in order, as a defragmenter
/// would: each move copies its source's current bytes to its destination.
void carry_out(const Json& plan, const fs::path& disk, std::uint64_t start, std::uint64_t cluster) {
    const int fd = ::open(disk.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    for (const Json& m : plan["moves"]) {
        std::string bytes(m["clusters"].get<std::size_t>() * cluster, '\0');
        const auto from = static_cast<off_t>(start + m["from_lcn"].get<std::uint64_t>() * cluster);
        const auto to = static_cast<off_t>(start + m["to_lcn"].get<std::uint64_t>() * cluster);
        REQUIRE(::pread(fd, bytes.data(), bytes.size(), from) == static_cast<ssize_t>(bytes.size()));
        REQUIRE(::pwrite(fd, bytes.data(), bytes.size(), to) == static_cast<ssize_t>(bytes.size()));
    }
    ::close(fd);
}

}  // namespace

TEST_CASE("impact --deep counts the distinct chunks of the disk before and after the moves", "[impact][deep]") {
    const fs::path raw = small_disk("impact-deep", 29);
    const test::WorkDir dir("impact-deep");
    const Json analysis = run_json({"analyze", raw.string(), "--json"});
    const std::uint64_t start = analysis["partitions"][0]["start"];
    const std::uint64_t cluster = analysis["volumes"][0]["cluster_size"];
    const fs::path plan_path = dir / "plan.json";
    const Json plan = make_plan(raw, plan_path, "optimize");
    REQUIRE(plan["moves"].size() > 10);

    const fs::path after = dir / "after.raw";
    fs::copy_file(raw, after);
    carry_out(plan, after, start, cluster);

    const Json doc = impact(raw, plan_path, {"--deep", "--dedup-chunk", "4K,16K,64K", "--read-rate", "1GiB/s"});
    REQUIRE(doc["figures"]["dedup"].size() == 3);
    for (const Json& d : doc["figures"]["dedup"]) {
        const std::uint64_t chunk = d["chunk"];
        INFO("chunk " << chunk);
        const auto [before_unique, chunks] = distinct_chunks(raw, chunk);
        const auto [after_unique, after_chunks] = distinct_chunks(after, chunk);
        CHECK(d["chunks"] == chunks);
        CHECK(d["unique_chunks_before"] == before_unique);
        CHECK(d["unique_chunks_after"] == after_unique);
        CHECK(d["rewritten_chunks"].get<std::uint64_t>() <= d["changed_chunks"].get<std::uint64_t>());
        CHECK(d["dedup_ratio_before"].get<double>() == Approx(double(chunks) / double(before_unique)));
    }
    // Nothing was written to the image itself.
    const auto unchanged = test::file_fingerprint(raw);
    impact(raw, plan_path, {"--deep"});
    CHECK(test::file_fingerprint(raw) == unchanged);
}

TEST_CASE("impact finds shadow copy stores and warns of copy-on-write under 16 KiB clusters", "[impact][vss]") {
    for (const std::uint32_t cluster : {4096u, 16384u}) {
        SECTION("clusters of " + std::to_string(cluster)) {
            const test::WorkDir dir("impact-vss-" + std::to_string(cluster));
            const fs::path disk = dir / "volume.raw";
            fs::copy_file(small_disk("impact-vss-" + std::to_string(cluster), 31, "none", cluster), disk);
            test::add_shadow_copy_store(disk, 3ull << 20);
            const fs::path plan_path = dir / "plan.json";
            const Json plan = make_plan(disk, plan_path, "consolidate");
            REQUIRE(!plan["moves"].empty());
            const Json doc = impact(disk, plan_path);
            const Json& vss = doc["figures"]["vss"];
            CHECK(vss["catalog"] == true);
            CHECK(vss["store_files"] == 1);
            CHECK(vss["store_bytes"] == 3ull << 20);
            CHECK(vss["copy_on_write"] == (cluster < 16384));
            CHECK(has_warning(doc, "VSS_COPY_ON_WRITE") == (cluster < 16384));
            if (cluster < 16384) {
                // Moved sources in 16 KiB blocks of the volume (a bare volume: disk offset 0).
                std::set<std::uint64_t> blocks;
                for (const Json& m : plan["moves"]) {
                    const std::uint64_t lo = m["from_lcn"].get<std::uint64_t>() * cluster;
                    const std::uint64_t hi = lo + m["clusters"].get<std::uint64_t>() * cluster;
                    for (std::uint64_t b = lo / 16384; b * 16384 < hi; ++b) blocks.insert(b);
                }
                CHECK(vss["copy_on_write_bytes"] == blocks.size() * 16384);
                CHECK(warning(doc, "VSS_COPY_ON_WRITE")["bytes"] == blocks.size() * 16384);
            }
        }
    }
}

TEST_CASE("impact flags the unaligned partitions of the DFTT disk as mmls places them", "[impact][alignment]") {
    const fs::path dftt = test::testdata("dftt-10-ntfs-disk.dd.xz");
    test::require_tools({"mmls"});
    const auto slots = test::mmls_partitions(dftt);
    REQUIRE(slots.size() == 2);
    const test::WorkDir dir("impact-dftt");
    const fs::path plan_path = dir / "plan.json";
    // The plan is for partition 1 only; alignment covers every partition.
    (void)run_json({"plan", dftt.string(), "--partition", "1", "-o", plan_path.string(), "--json"});
    const Json doc = impact(dftt, plan_path);
    const Json& alignment = doc["figures"]["alignment"];
    REQUIRE(alignment.size() == slots.size());
    std::size_t misaligned = 0;
    for (std::size_t i = 0; i < slots.size(); ++i) {
        const std::uint64_t start = slots[i].first * 512;
        CHECK(alignment[i]["start"] == start);
        CHECK(alignment[i]["aligned_1mib"] == (start % (1 << 20) == 0));
        std::vector<std::uint64_t> expected;
        for (const std::uint64_t c : {4096, 8192, 16384, 32768})
            if (start % c != 0) expected.push_back(c);
        CHECK(alignment[i]["misaligned_chunks"].get<std::vector<std::uint64_t>>() == expected);
        if (!expected.empty()) ++misaligned;
    }
    std::size_t warnings = 0;
    for (const Json& w : doc["warnings"])
        if (w["code"] == "MISALIGNED_PARTITION" && w["severity"] == "warning") ++warnings;
    CHECK(misaligned == 2);  // sector 63 and sector 96390: neither is a multiple of 8 sectors
    CHECK(warnings == misaligned);
}

TEST_CASE("impact refuses bad plans and options with one line", "[impact][bad-input]") {
    const fs::path raw = small_disk("impact-growth", 23);
    const fs::path other = small_disk("impact-deep", 29);
    const test::WorkDir dir("impact-bad");
    const fs::path plan_path = dir / "plan.json";
    make_plan(raw, plan_path);

    // A plan for another image: exit 2 naming the plan.
    auto r = test::run_cli({"impact", other.string(), "--plan", plan_path.string()});
    CHECK(r.status == 2);
    CHECK(r.err.rfind("guestfrag: error: " + plan_path.string() + ": plan was made for another image", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);

    // A truncated plan file.
    const fs::path broken = dir / "broken.json";
    std::ofstream(broken) << R"({"schema": "guestfrag.plan.v1", "moves": [)";
    r = test::run_cli({"impact", raw.string(), "--plan", broken.string()});
    CHECK(r.status == 2);
    CHECK(r.err.rfind("guestfrag: error: " + broken.string() + ": ", 0) == 0);

    // Usage errors: no plan, a chunk that is not a power of two, a rate of zero.
    CHECK(test::run_cli({"impact", raw.string()}).status == 1);
    CHECK(test::run_cli({"impact", raw.string(), "--plan", plan_path.string(), "--dedup-chunk", "4K,3K"}).status == 1);
    CHECK(test::run_cli({"impact", raw.string(), "--plan", plan_path.string(), "--read-rate", "0/s"}).status == 1);
}
