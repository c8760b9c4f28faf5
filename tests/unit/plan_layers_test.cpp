// SPDX-License-Identifier: GPL-2.0-or-later
// Every strategy plans, and its plan file passes the validator, on a sparse VMDK and on a
// qcow2 linked clone; thin-safe on the clone writes nothing outside the clone's own granules.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

void plan_and_check(const fs::path& image, const std::string& strategy) {
    const std::string plan = image.string() + "." + strategy + ".plan.json";
    const auto made = test::run_cli({"plan", image.string(), "--strategy", strategy, "-o", plan, "--json"});
    INFO(image.string() << " " << strategy << ": " << made.err);
    REQUIRE(made.status == 0);
    const auto doc = nlohmann::json::parse(made.out);
    CHECK(doc["schema"] == "guestfrag.plan.v1");
    if (strategy == "thin-safe") {
        CHECK(doc["summary"]["thin_growth_bytes"] == 0);
        CHECK(doc["summary"]["clone_delta_growth_bytes"] == 0);
    }
    // The written plan replays cleanly against the same image.
    const auto checked = test::run_cli({"plan", image.string(), "--check", plan});
    INFO(checked.err);
    CHECK(checked.status == 0);
}

}  // namespace

TEST_CASE("plans on a sparse VMDK and on a qcow2 linked clone pass the validator", "[plan][formats]") {
    test::require_tools({"qemu-img"});
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 200;
    o.seed = 17;
    const fs::path raw = test::generated_image("plan-layers", o);
    const fs::path dir = test::scratch_dir() / ("plan-layers." + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path vmdk = dir / "disk.vmdk";
    REQUIRE(test::run({"qemu-img", "convert", "-f", "raw", "-O", "vmdk", raw.string(), vmdk.string()}).status == 0);
    const fs::path base = dir / "base.qcow2";
    const fs::path clone = dir / "clone.qcow2";
    REQUIRE(test::run({"qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw.string(), base.string()}).status == 0);
    REQUIRE(test::run({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "base.qcow2", "-F", "qcow2",
                       clone.string()}).status == 0);

    for (const std::string strategy : {"defrag", "consolidate", "thin-safe", "shrink"}) {
        plan_and_check(vmdk, strategy);
        plan_and_check(clone, strategy);
    }
    // A linked clone: report weighs every strategy and says what each would grow the clone by.
    const auto report = test::run_cli({"report", clone.string(), "--json"});
    REQUIRE(report.status == 0);
    const auto plans = nlohmann::json::parse(report.out)["volumes"][0]["verdict"]["plans"];
    REQUIRE(plans.size() >= 5);
    for (const auto& p : plans)
        if (p["strategy"] == "thin-safe") CHECK(p["growth_bytes"] == 0);
    fs::remove_all(dir);
}
