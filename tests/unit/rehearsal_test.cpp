// SPDX-License-Identifier: GPL-2.0-or-later
// The rehearsal (core/apply/rehearsal.hpp): what it says libntfs-3g leaves of each moved
// file's attribute list is what The Sleuth Kit's istat finds in the applied output, it
// writes nothing, and the plan's prediction includes it.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/mkimage/mkimage.hpp"
#include "core/apply/rehearsal.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"
#include "pipeline/pipeline.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

/// istat's $ATTRIBUTE_LIST of `record` on `image`: non-resident or not, its size and its
/// clusters in VCN order.
struct IstatList {
    bool non_resident = false;
    std::uint64_t size = 0;
    std::vector<std::int64_t> clusters;
};

IstatList istat_list(const fs::path& image, std::uint64_t record) {
    const auto run = test::run({"istat", image.string(), std::to_string(record)});
    REQUIRE(run.status == 0);
    IstatList out;
    std::istringstream lines(run.out);
    bool in_list = false;
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("Type: ")) {
            in_list =
                line.starts_with("Type: $ATTRIBUTE_LIST") && line.find("Non-Resident") != std::string::npos;
            if (in_list) {
                out.non_resident = true;
                out.size = std::stoull(line.substr(line.find("size: ") + 6));
            }
            continue;
        }
        if (!in_list) continue;
        std::istringstream numbers(line);
        for (std::int64_t c = 0; numbers >> c;) out.clusters.push_back(c);
    }
    return out;
}

std::vector<std::int64_t> clusters_of(const std::vector<Extent>& runs) {
    std::vector<std::int64_t> out;
    for (const Extent& e : runs)
        for (std::int64_t c = 0; c < e.clusters; ++c) out.push_back(e.lcn + c);
    return out;
}

}  // namespace

TEST_CASE("the rehearsal foresees each moved file's attribute list as istat finds it after apply",
          "[apply][rehearsal]") {
    test::require_tools({"istat"});
    // 512-byte clusters and a pair of 1,400-run files: their non-resident lists shrink when
    // the files are defragmented; the optimize plan also moves small files with lists.
    MkImageOptions o;
    o.table = "none";
    o.disk_size = 128ull << 20;
    o.cluster_size = 512;
    o.files = 240;
    o.delete_fraction = 0.3;
    o.seed = 31;
    const fs::path image = test::generated_image("rehearsal-512", o);
    const test::WorkDir dir("rehearsal");
    const std::uint64_t fingerprint = test::file_fingerprint(image);

    for (const char* strategy : {"defrag", "optimize"}) {
        INFO("strategy " << strategy);
        const fs::path plan_path = dir / (std::string(strategy) + ".json");
        REQUIRE(test::run_cli({"plan", image.string(), "--strategy", strategy, "-o", plan_path.string()})
                    .status == 0);
        const fs::path out = dir / (std::string(strategy) + ".raw");
        const auto applied =
            test::run_cli({"apply", image.string(), "--plan", plan_path.string(), "-o", out.string()});
        INFO(applied.err);
        REQUIRE(applied.status == 0);

        const OpenedImage opened = open_and_analyze(image.string());
        const VolumeMap& before = opened.analysis->volumes.front().map;
        const Plan plan = read_plan(plan_path.string());
        const VolumeMap replayed = apply_plan(before, plan);
        const std::vector<std::uint64_t> files = files_to_rehearse(before, replayed, plan);
        REQUIRE(files.size() >= 2);  // the pair at least
        const Rehearsal rehearsal =
            rehearse_moves(*opened.image, volume_window(*opened.analysis, before), before, plan, files);
        CHECK(rehearsal.skipped.empty());
        REQUIRE(rehearsal.lists.size() == files.size());
        std::size_t shortened = 0;
        for (const RehearsedList& list : rehearsal.lists) {
            INFO("record " << list.record);
            const IstatList found = istat_list(out, list.record);
            CHECK(found.non_resident == list.non_resident);
            if (!list.non_resident) continue;
            CHECK(found.size == list.size);
            CHECK(found.clusters == clusters_of(list.runs));
            const auto was = std::ranges::find_if(before.streams, [&](const Stream& s) {
                return s.mft_record == list.record &&
                       s.type == static_cast<std::uint32_t>(AttrType::AttributeList);
            });
            if (was != before.streams.end() && was->size > list.size) ++shortened;
        }
        CHECK(shortened >= 2);  // the pair's lists lose the entries of the records they freed

        // The plan's after-state holds the rehearsed lists.
        VolumeMap amended = replayed;
        adopt_rehearsal(amended, rehearsal);
        std::uint64_t fragments = 0;
        for (const Stream& s : amended.streams) fragments += s.fragments();
        const PlannedVolume adopted = adopt_plan(opened, 0, plan);
        CHECK(adopted.plan.summary.fragments_after == fragments);
        CHECK(adopted.after->free == amended.free);
    }
    CHECK(test::file_fingerprint(image) == fingerprint);  // the rehearsals wrote nothing
}
