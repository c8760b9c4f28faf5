// SPDX-License-Identifier: GPL-2.0-or-later
// The systemd batch units: valid for systemd, and the service does what its comments say
// (the images directory's images and those of /etc/guestfrag/images.list), run as systemd
// would run its ExecStart, with the build's guestfrag in place of /usr/bin/guestfrag.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "support/batch_results.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

const fs::path kUnits = fs::path(GUESTFRAG_TESTDATA_DIR) / ".." / ".." / "packaging" / "systemd";

/// Replaces every `from` in `text` by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

/// The service's Environment= settings and its ExecStart's shell script as the shell gets it
/// (systemd turns `$$` into `$`), the program's path replaced by the build's.
struct Service {
    std::map<std::string, std::string> environment;
    std::string script;
};

Service read_service() {
    std::ifstream in(kUnits / "guestfrag-batch.service");
    REQUIRE(in);
    Service service;
    const std::string env = "Environment=";
    const std::string exec = "ExecStart=/bin/sh -c '";
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(env)) {
            const std::string setting = line.substr(env.size());
            const std::size_t eq = setting.find('=');
            REQUIRE(eq != std::string::npos);
            service.environment[setting.substr(0, eq)] = setting.substr(eq + 1);
        } else if (line.starts_with(exec)) {
            REQUIRE(line.ends_with("'"));
            const std::string script = line.substr(exec.size(), line.size() - exec.size() - 1);
            service.script = replace_all(replace_all(script, "$$", "$"), "/usr/bin/guestfrag", GUESTFRAG_CLI);
        }
    }
    REQUIRE(!service.script.empty());
    return service;
}

/// Runs the service's script with its environment, `overrides` applied.
test::CommandResult run_service(const Service& service, const std::map<std::string, std::string>& overrides) {
    std::map<std::string, std::string> environment = service.environment;
    for (const auto& [name, value] : overrides) environment[name] = value;
    std::vector<std::string> argv{"env"};
    for (const auto& [name, value] : environment) argv.push_back(name + "=" + value);
    for (const char* word : {"sh", "-c"}) argv.emplace_back(word);
    argv.push_back(service.script);
    return test::run(argv);
}

}  // namespace

TEST_CASE("the batch service and timer are valid systemd units", "[packaging]") {
    test::require_tools({"systemd-analyze"});
    const test::CommandResult r =
        // --man=no: the units name man:guestfrag(1), which exists once the package is
        // installed (`setup.sh deb` verifies the installed units with it), not in a build tree.
        test::run({"systemd-analyze", "verify", "--man=no", (kUnits / "guestfrag-batch.service").string(),
                   (kUnits / "guestfrag-batch.timer").string()});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
}

TEST_CASE("the batch service analyses the images of its directory and of its list", "[packaging]") {
    const Service service = read_service();
    CHECK(service.environment.at("GUESTFRAG_LIST") == "/etc/guestfrag/images.list");
    CHECK(service.environment.at("GUESTFRAG_IMAGES") == "/var/lib/guestfrag/images");
    const test::WorkDir work("packaging-service");
    const fs::path listed = test::small_cli_image();
    const fs::path images = work / "images";
    const fs::path list = work / "images.list";
    const fs::path db = work / "guestfrag.sqlite";
    const std::map<std::string, std::string> paths{{"GUESTFRAG_IMAGES", images.string()},
                                                   {"GUESTFRAG_LIST", list.string()},
                                                   {"GUESTFRAG_DB", db.string()}};

    SECTION("neither: the unit fails, saying why") {
        const test::CommandResult r = run_service(service, paths);
        CHECK(r.status == 1);
        CHECK(r.err.find("no images given") != std::string::npos);
        CHECK(!fs::exists(db));
    }
    SECTION("the list alone, and then the directory too") {
        std::ofstream(list) << "# the images of this host\n" << listed.string() << "\n";
        test::CommandResult r = run_service(service, paths);
        INFO(r.err);
        REQUIRE(r.status == 0);
        auto rows = test::image_rows(db.string());
        REQUIRE(rows.size() == 1);
        CHECK(std::get<0>(rows.at(listed.string())) == "ok");

        fs::create_directory(images);
        const fs::path in_dir = images / "vm.raw";
        REQUIRE(test::run({"cp", "--sparse=always", listed.string(), in_dir.string()}).status == 0);
        r = run_service(service, paths);
        INFO(r.err);
        REQUIRE(r.status == 0);
        rows = test::image_rows(db.string());
        CHECK(rows.size() == 2);
        CHECK(std::get<0>(rows.at(in_dir.string())) == "ok");
    }
}
