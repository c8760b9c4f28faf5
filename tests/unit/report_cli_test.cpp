// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag report` reproduces what `plan` and `estimate --plan` compute separately.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"

using namespace guestfrag;

TEST_CASE("report --verbose shows the plan asked for as plan + estimate compute it", "[cli][report]") {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 200;
    o.seed = 13;
    const auto image = test::generated_image("report-msdos", o).string();

    // The verdict on this small volume is no action (no plan saves 0.1 s of a scan); the plan
    // asked for is shown all the same, marked so.
    const auto report = test::run_cli({"report", image, "--strategy", "thin-safe", "--verbose"});
    INFO(report.err);
    REQUIRE(report.status == 0);
    CHECK(report.out.rfind("Partition 1: no action\n", 0) == 0);
    CHECK(report.out.find("The plan asked for (not worth running) for partition 1") != std::string::npos);
    CHECK(report.out.find("thin growth                                    0 B") != std::string::npos);

    const std::string plan = (test::scratch_dir() / "report-plan.json").string();
    REQUIRE(test::run_cli({"plan", image, "--strategy", "thin-safe", "-o", plan}).status == 0);
    const auto estimate = test::run_cli({"estimate", image, "--plan", plan, "--json"});
    REQUIRE(estimate.status == 0);
    const auto doc = nlohmann::json::parse(estimate.out);
    const auto before = doc["volumes"][0]["before"]["ios"].get<std::uint64_t>();
    const auto after = doc["volumes"][0]["after"]["ios"].get<std::uint64_t>();

    // The estimate's totals (the impact section above has IO tables of its own: the plan's).
    const std::size_t estimate_at = report.out.find("IO estimate for ");
    REQUIRE(estimate_at != std::string::npos);
    const std::string estimate_text = report.out.substr(estimate_at);
    std::smatch m;
    REQUIRE(std::regex_search(estimate_text, m, std::regex(R"(\n  IOs\s+(\d+)\s+(\d+))")));
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

TEST_CASE("report shows a full copy's three states, in text and JSON, as impact does",
          "[cli][report][copy][qemu]") {
    test::require_tools({"qemu-img"});
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 200;
    o.seed = 17;
    const auto raw = test::generated_image("report-copy", o);
    const test::WorkDir dir("report-copy");
    const std::string image = (dir / "thin.qcow2").string();
    test::run_ok({"qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw.string(), image});

    const auto text = test::run_cli({"report", image, "--strategy", "optimize", "--verbose"});
    INFO(text.err);
    REQUIRE(text.status == 0);
    const auto section =
        text.out.find("Full copy of the image (clone, deploy, Storage vMotion): offload commands");
    REQUIRE(section != std::string::npos);
    const std::string states = text.out.substr(section);
    std::smatch row;
    REQUIRE(std::regex_search(states, row, std::regex(R"(\n  4\.00 MiB\s+(\d+)\s+(\d+)\s+(\d+)\s)")));

    const auto r = test::run_cli({"report", image, "--strategy", "optimize", "--json"});
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["schema"] == "guestfrag.report.v1");
    CHECK(doc["analysis"]["image"]["copy"]["chain"]["offload"].size() == 4);
    REQUIRE(doc["volumes"].size() == 1);
    const auto& volume = doc["volumes"][0];
    CHECK(volume["strategy"] == "optimize");
    const auto& copy = volume["impact"]["copy"];
    nlohmann::json at4;
    for (const auto& s : copy["states"])
        if (s["transfer_size"] == 4u << 20) at4 = s;
    REQUIRE(at4.is_object());
    // The text's row is the JSON's, and the plan grows the thin disk: more commands after.
    CHECK(std::stoull(row[1]) == at4["now"]["commands"].get<std::uint64_t>());
    CHECK(std::stoull(row[2]) == at4["after_plan"]["commands"].get<std::uint64_t>());
    CHECK(std::stoull(row[3]) == at4["relaid"]["commands"].get<std::uint64_t>());
    CHECK(volume["impact"]["figures"]["thin_growth_bytes"].get<std::uint64_t>() > 0);
    CHECK(at4["after_plan"]["commands"] > at4["now"]["commands"]);

    // `impact` of the same plan carries the same states.
    const std::string plan = (dir / "plan.json").string();
    std::ofstream(plan) << volume["plan"].dump();
    const auto impact = test::run_cli({"impact", image, "--plan", plan, "--json"});
    INFO(impact.err);
    REQUIRE(impact.status == 0);
    CHECK(nlohmann::json::parse(impact.out)["copy"] == copy);

    // The preset's costs can be replaced: 1 ms a command and 1 GiB/s.
    const auto costs = test::run_cli({"impact", image, "--plan", plan, "--json", "--offload-command-ms", "1",
                                      "--offload-rate", "1GiB/s", "--transfer-size", "4M"});
    REQUIRE(costs.status == 0);
    const auto costed = nlohmann::json::parse(costs.out)["copy"];
    REQUIRE(costed["states"].size() == 1);
    const double bytes = costed["now"]["bytes"].get<double>();
    CHECK(costed["states"][0]["now"]["seconds"].get<double>() ==
          Approx(at4["now"]["commands"].get<double>() * 0.001 + bytes / double(1u << 30)));
    CHECK(test::run_cli({"impact", image, "--plan", plan, "--copy-preset", "no-such"}).status == 1);
}

TEST_CASE("report weighs the orders for the workload and chooses the one that saves the most",
          "[cli][report][order]") {
    const auto image = test::fragmented_256_image().string();
    const auto r =
        test::run_cli({"report", image, "--strategy", "optimize", "--workload", "scan:path", "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const auto doc = nlohmann::json::parse(r.out);
    const auto& volume = doc["volumes"][0];
    const auto& plans = volume["verdict"]["plans"];
    REQUIRE(plans.size() == 2);
    CHECK(plans[0]["order"] == "size");
    CHECK(plans[1]["order"] == "path");
    // A tree walk is served best by the tree's order, and the verdict's plan is that one.
    CHECK(volume["verdict"]["action"] == "plan");
    CHECK(volume["verdict"]["chosen"] == 1);
    CHECK(volume["order"] == "path");
    CHECK(volume["plan"]["order"] == "path");
    CHECK(plans[1]["seconds_saved"]["array"].get<double>() >
          plans[0]["seconds_saved"]["array"].get<double>());

    const auto refused = test::run_cli({"report", image, "--strategy", "thin-safe", "--order", "path"});
    CHECK(refused.status == 1);
    CHECK(refused.err.find("thin-safe cannot take --order path") != std::string::npos);
}
