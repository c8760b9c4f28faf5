// SPDX-License-Identifier: GPL-2.0-or-later
// NTFS volumes whose metadata contradicts itself (docs/design.md §6.1): cross-linked
// clusters, clusters in use but free in $Bitmap, and $MFT sizes that claim more than their
// runlists map. analyze reports them as warnings; plan refuses with one line, exit 2.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"
#include "support/ntfs_edit.hpp"
#include "support/tsk_oracle.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// A private copy of a small generated bare NTFS volume (no partition table: sector 0 is
// the boot sector, which is where TSK is pointed).
fs::path hostile_copy(const std::string& name) {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = "none";
    o.files = 200;
    o.seed = 3;
    const fs::path source = test::generated_image("tiny-none", o);
    const fs::path copy = test::scratch_dir() / ("hostile-" + name + ".img");
    fs::copy_file(source, copy, fs::copy_options::overwrite_existing);
    return copy;
}

Json analyze_json(const fs::path& image) {
    const auto r = test::run_cli({"analyze", image.string(), "--json"});
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    return Json::parse(r.out);
}

std::uint32_t cluster_size(const fs::path& image) { return analyze_json(image)["volumes"][0]["cluster_size"]; }

// The volume's warning with `code`; fails the test when there is none.
Json warning(const Json& volume, const std::string& code) {
    for (const Json& w : volume["warnings"])
        if (w["code"] == code) return w;
    FAIL("no warning " << code << " in " << volume["warnings"].dump());
    return {};
}

// `plan` refuses the volume: exit 2, one line, the finding's text and the chkdsk advice.
void require_plan_refused(const fs::path& image, const std::string& reason) {
    const auto r = test::run_cli({"plan", image.string()});
    INFO("stderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err == "guestfrag: error: " + image.string() + ": " + reason + "; run chkdsk before planning\n");
    // compact refuses it alike, and what its copy wrote beside the planning goes.
    test::WorkDir dir("hostile-compact");
    const auto c = test::run_cli({"compact", image.string(), "-o", (dir / "out.raw").string()});
    CHECK(c.status == 2);
    CHECK(c.err == r.err);
    CHECK(fs::is_empty(dir.path()));
}

// The volume's one warning is `code` saying `text` about clusters `first`..`last` of
// `inodes`, and `plan` refuses the volume for it. Returns the warning.
Json require_one_conflict(const fs::path& image, const std::string& code, const std::string& text, std::int64_t first,
                          std::int64_t last, const std::vector<std::uint64_t>& inodes) {
    const Json volume = analyze_json(image)["volumes"][0];
    REQUIRE(volume["warnings"].size() == 1);
    const Json w = warning(volume, code);
    CHECK(w["message"] == text);
    CHECK(w["clusters"] == last - first + 1);
    CHECK(w["conflicts"] == Json::array({Json{{"clusters", Json::array({first, last})}, {"inodes", inodes}}}));
    require_plan_refused(image, "volume " + std::to_string(int{volume["partition"]}) + ": " + text);
    return w;
}

}  // namespace

TEST_CASE("cross-linked files: analyze lists the shared clusters, plan refuses", "[hostile][ntfs]") {
    test::require_tools({"istat"});
    const fs::path image = hostile_copy("cross-link");
    const std::uint32_t cs = cluster_size(image);
    const std::uint64_t a = test::add_file(image, "a.bin", 8ull * cs);
    const std::uint64_t b = test::add_file(image, "b.bin", 4ull * cs);
    const auto a_runs = test::tsk_data_fragments(image, 0, a).at("");
    REQUIRE(a_runs.size() == 1);
    REQUIRE(a_runs[0].second == 8);
    const std::int64_t lcn = a_runs[0].first;

    // b now claims a's clusters 2..5; its own four clusters stay set in $Bitmap, owned by
    // nobody (harmless: nothing would be moved onto them).
    test::set_data_runs(image, b, {{lcn + 2, 4}});
    REQUIRE(test::tsk_data_fragments(image, 0, b).at("") == test::Fragments{{lcn + 2, 4}});
    REQUIRE(test::tsk_data_fragments(image, 0, a).at("") == a_runs);

    const std::string text = "clusters " + std::to_string(lcn + 2) + "-" + std::to_string(lcn + 5) +
                             " belong to both inode " + std::to_string(a) + " and inode " + std::to_string(b) +
                             " (cross-linked)";
    const Json w = require_one_conflict(image, "CROSS_LINKED_CLUSTERS", text, lcn + 2, lcn + 5, {a, b});
    CHECK(w["blocks_plan"] == true);
    CHECK(w["conflict_count"] == 1);

    const auto text_out = test::run_cli({"analyze", image.string()});
    CHECK(text_out.status == 0);
    CHECK(text_out.out.find("CROSS_LINKED_CLUSTERS") != std::string::npos);
    // No plan can be made, so no verdict: said first, and the measurements follow.
    CHECK(text_out.out.rfind("Partition 0: no verdict: ", 0) == 0);
    CHECK_THAT(text_out.out, Catch::Contains("cross-linked"));
    const auto check = test::run_cli({"analyze", "--check", image.string()});
    CHECK(check.status == 2);
    // Every front end says it alike: report, and the JSON's verdict.
    const auto report = test::run_cli({"report", image.string()});
    CHECK(report.status == 0);
    CHECK(report.out.rfind(text_out.out.substr(0, text_out.out.find('\n') + 1), 0) == 0);
    const Json verdict =
        Json::parse(test::run_cli({"analyze", image.string(), "--json"}).out)["volumes"][0]["verdict"];
    CHECK(verdict["action"] == "unavailable");
    CHECK(verdict["reason"] == text_out.out.substr(13, text_out.out.find('\n') - 13));
}

TEST_CASE("a file mapping its own clusters twice is cross-linked", "[hostile][ntfs]") {
    test::require_tools({"istat"});
    const fs::path image = hostile_copy("self-link");
    const std::uint32_t cs = cluster_size(image);
    const std::uint64_t b = test::add_file(image, "b.bin", 6ull * cs);
    const auto runs = test::tsk_data_fragments(image, 0, b).at("");
    REQUIRE(runs.size() == 1);
    const std::int64_t lcn = runs[0].first;
    // The second run steps back over the first one's last two clusters. (A run at the very
    // same LCN cannot be written: a zero LCN delta encodes a hole.)
    test::set_data_runs(image, b, {{lcn, 4}, {lcn + 2, 2}});
    REQUIRE(test::tsk_data_fragments(image, 0, b).at("") == test::Fragments{{lcn, 4}, {lcn + 2, 2}});

    const std::string text = "clusters " + std::to_string(lcn + 2) + "-" + std::to_string(lcn + 3) +
                             " are mapped twice by inode " + std::to_string(b) + " (cross-linked)";
    (void)require_one_conflict(image, "CROSS_LINKED_CLUSTERS", text, lcn + 2, lcn + 3, {b});
}

TEST_CASE("clusters in use but free in $Bitmap: analyze lists them, plan refuses", "[hostile][ntfs]") {
    test::require_tools({"istat", "blkstat"});
    const fs::path image = hostile_copy("bitmap");
    const std::uint32_t cs = cluster_size(image);
    const std::uint64_t a = test::add_file(image, "a.bin", 8ull * cs);
    const auto a_runs = test::tsk_data_fragments(image, 0, a).at("");
    REQUIRE(a_runs.size() == 1);
    const std::int64_t lcn = a_runs[0].first;

    test::clear_bitmap_bits(image, lcn + 1, 3);
    // TSK reads $Bitmap on its own: the cleared clusters are unallocated for it too.
    for (std::int64_t c = lcn; c < lcn + 5; ++c) {
        const auto r = test::run({"blkstat", "-f", "ntfs", "-o", "0", image.string(), std::to_string(c)});
        REQUIRE(r.status == 0);
        const bool free = r.out.find("Not Allocated") != std::string::npos;
        CHECK(free == (c >= lcn + 1 && c < lcn + 4));
    }

    const std::string text = "clusters " + std::to_string(lcn + 1) + "-" + std::to_string(lcn + 3) + " of inode " +
                             std::to_string(a) + " are marked free in $Bitmap";
    (void)require_one_conflict(image, "BITMAP_MISMATCH", text, lcn + 1, lcn + 3, {a});
}

TEST_CASE("$MFT claiming 2^40 bytes: the record total follows its runlist", "[hostile][ntfs]") {
    test::require_tools({"istat"});
    const fs::path image = hostile_copy("mft-size");
    const Json before = analyze_json(image)["volumes"][0];
    const std::uint64_t cs = before["cluster_size"];
    const std::uint64_t record_size = before["mft"]["record_size"];
    // The oracle: the clusters $MFT's runlist maps, as TSK reads them.
    const test::Fragments mft_runs = test::tsk_data_fragments(image, 0, 0).at("");
    std::uint64_t mapped = 0;
    for (const auto& [lcn, clusters] : mft_runs) mapped += static_cast<std::uint64_t>(clusters);
    REQUIRE(mapped > 0);

    test::set_mft_attribute_size(image, 0x80, std::uint64_t{1} << 40);
    const Json after = analyze_json(image)["volumes"][0];
    CHECK(after["mft"]["records_total"] == mapped * cs / record_size);
    CHECK(after["mft"]["records_total"] == before["mft"]["records_total"]);
    CHECK(after["mft"]["records_in_use"] == before["mft"]["records_in_use"]);
    const Json w = warning(after, "MFT_SIZE_MISMATCH");
    CHECK(w["message"] == "$MFT claims 1099511627776 bytes but its runlist maps " + std::to_string(mapped * cs) +
                              "; only those are counted");
    CHECK(w["blocks_plan"] == false);
}

TEST_CASE("$MFT::$BITMAP claiming 3 GiB over one cluster: bounded memory", "[hostile][ntfs]") {
    const fs::path image = hostile_copy("mft-bitmap-size");
    const Json before = analyze_json(image)["volumes"][0];
    test::set_mft_attribute_size(image, 0xB0, std::uint64_t{3} << 30);

    const auto r = test::run_cli_measured({"analyze", image.string(), "--json"});
    INFO("stderr: " << r.err);
    CHECK(r.peak_rss_kib > 0);
    CHECK(r.input_rss_kib <= 256 * 1024);
    REQUIRE(r.status == 0);
    const Json after = Json::parse(r.out)["volumes"][0];
    CHECK(after["mft"]["records_total"] == before["mft"]["records_total"]);
    CHECK(after["mft"]["records_in_use"] == before["mft"]["records_in_use"]);
    const Json w = warning(after, "MFT_BITMAP_SIZE_MISMATCH");
    CHECK(w["message"].get<std::string>().rfind("$MFT::$BITMAP claims 3221225472 bytes but its runlist maps ", 0) == 0);

    // Only a claimed size is wrong, so the volume may be planned, in as little memory.
    const auto plan = test::run_cli_measured({"plan", image.string()});
    INFO("plan stderr: " << plan.err);
    CHECK(plan.status == 0);
    CHECK(plan.input_rss_kib <= 256 * 1024);
}

TEST_CASE("a $FILE_NAME of any namespace byte, or of no characters, reads without undefined behaviour",
          "[hostile][ntfs]") {
    // Both were undefined behaviour in the MFT parser (found by ntfs_fuzz under UBSan): a
    // namespace loaded as ntfs-3g's 0-3 enum, and a copy of 0 characters from a null
    // pointer. The sanitizer build of this test is what fails if either comes back.
    const fs::path image = hostile_copy("file-names");
    const std::uint64_t odd = test::add_file(image, "odd-namespace.bin", 20000);
    const std::uint64_t nameless = test::add_file(image, "nameless.bin", 20000);
    test::set_file_name_fields(image, odd, 50, 17);  // 50 & 3 is 2, the DOS namespace
    test::set_file_name_fields(image, nameless, 1, 0);

    const auto r = test::run_cli({"analyze", image.string(), "--json", "--files"});
    INFO("stderr: " << r.err);
    REQUIRE(r.status == 0);
    const Json analysis = Json::parse(r.out);
    std::map<std::uint64_t, std::string> path_of;
    for (const Json& s : analysis["volumes"][0]["streams"]) path_of[s["mft_record"]] = s["path"];
    // The only name a file has is its name, whatever its namespace; an empty one leaves the
    // path of its directory with an empty last component.
    CHECK(path_of.at(odd) == "\\odd-namespace.bin");
    CHECK(path_of.at(nameless) == "\\");
}
