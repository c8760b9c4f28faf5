// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag report` reproduces what `plan` and `estimate --plan` compute separately.
#include <catch2/catch.hpp>

#include <regex>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"

using namespace guestfrag;

TEST_CASE("report recommends thin-safe on a thin disk and matches plan + estimate", "[cli][report]") {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 200;
    o.seed = 13;
    const auto image = test::generated_image("report-msdos", o).string();

    const auto report = test::run_cli({"report", image});
    INFO(report.err);
    REQUIRE(report.status == 0);
    // A generated raw image is sparse on the host: thin, so thin-safe is recommended.
    CHECK(report.out.find("Recommended strategy for partition 1: thin-safe") != std::string::npos);
    CHECK(report.out.find("thin growth                                    0 B") != std::string::npos);

    const std::string plan = (test::scratch_dir() / "report-plan.json").string();
    REQUIRE(test::run_cli({"plan", image, "--strategy", "thin-safe", "-o", plan}).status == 0);
    const auto estimate = test::run_cli({"estimate", image, "--plan", plan, "--json"});
    REQUIRE(estimate.status == 0);
    const auto doc = nlohmann::json::parse(estimate.out);
    const auto before = doc["volumes"][0]["before"]["ios"].get<std::uint64_t>();
    const auto after = doc["volumes"][0]["after"]["ios"].get<std::uint64_t>();

    std::smatch m;
    REQUIRE(std::regex_search(report.out, m, std::regex(R"(\n  IOs\s+(\d+)\s+(\d+))")));
    CHECK(std::stoull(m[1]) == before);
    CHECK(std::stoull(m[2]) == after);
    CHECK(after <= before);

    // The report's storage warnings are `impact`'s for the same plan, in the same order.
    const auto impact = test::run_cli({"impact", image, "--plan", plan, "--json"});
    REQUIRE(impact.status == 0);
    std::vector<std::string> expected;
    const auto impact_doc = nlohmann::json::parse(impact.out);
    for (const auto& w : impact_doc["warnings"])
        expected.push_back(w["severity"].get<std::string>() + " " + w["code"].get<std::string>());
    std::vector<std::string> reported;
    const std::regex line(R"(\n  (info|warning|critical)\s+([A-Z_]+)\s)");
    for (auto it = std::sregex_iterator(report.out.begin(), report.out.end(), line); it != std::sregex_iterator(); ++it)
        reported.push_back((*it)[1].str() + " " + (*it)[2].str());
    CHECK(reported == expected);
    CHECK_FALSE(expected.empty());
}

TEST_CASE("report on bad input exits 2 with one line", "[cli][report][bad-input]") {
    const auto r = test::run_cli({"report", (test::scratch_dir() / "no-such.img").string()});
    CHECK(r.status == 2);
    CHECK(r.err.rfind("guestfrag: error: ", 0) == 0);
}
