// SPDX-License-Identifier: GPL-2.0-or-later
// Images read from real NBD servers the test starts on unix sockets (nbdkit, qemu-nbd): the
// same answers as the local files, and every way a server can fail is one line and exit 2.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/image/nbd_uri.hpp"
#include "core/image/unique_fd.hpp"
#include "support/fixtures.hpp"
#include "support/nbd_server.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;
using test::NbdServer;

namespace {

/// `doc` with what only a host file has (FIEMAP layouts) left out, and every location of
/// `server`'s exports written as the file of `dir` it serves.
Json as_local(Json doc, const NbdServer& server, const fs::path& dir) {
    if (doc.is_object()) {
        doc.erase("physical_files");
        for (auto& [key, value] : doc.items()) value = as_local(value, server, dir);
    } else if (doc.is_array()) {
        for (auto& value : doc) value = as_local(value, server, dir);
    } else if (doc.is_string()) {
        std::string text = doc.get<std::string>();
        const std::string query = "?socket=" + server.socket();
        for (std::size_t at; (at = text.find(query)) != std::string::npos;) text.erase(at, query.size());
        for (std::size_t at; (at = text.find("nbd+unix:///")) != std::string::npos;)
            text.replace(at, 12, dir.string() + "/");
        doc = text;
    }
    return doc;
}

Json analysis(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"analyze"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--json");
    const test::CommandResult r = test::run_cli(argv);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return Json::parse(r.out);
}

/// Exit 2 with one line on stderr, the error line.
void require_refusal(const test::CommandResult& r, const std::string& says) {
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.starts_with("guestfrag: error: "));
    CHECK(r.err.find('\n') == r.err.size() - 1);
    CHECK(r.err.find(says) != std::string::npos);
}

/// A directory holding the bundled NTFS qcow2 and what qemu-img makes of it.
struct Images {
    test::WorkDir dir{"nbd"};
    Images() {
        test::require_tools({"qemu-img", "nbdkit", "qemu-nbd"});
        const fs::path source = test::testdata("windows_volume.qcow2");
        fs::copy_file(source, dir / "disk.qcow2");
        fs::copy_file(test::testdata("hyperv-dynamic.vhdx.gz"), dir / "hyperv.vhdx");
        for (const auto& [format, name] :
             {std::pair{"raw", "disk.raw"}, {"vmdk", "disk.vmdk"}, {"vhdx", "disk.vhdx"}})
            REQUIRE(test::run({"qemu-img", "convert", "-f", "qcow2", "-O", format,
                               (dir / "disk.qcow2").string(), (dir / name).string()})
                        .status == 0);
        // A linked clone whose parent is recorded by its relative name.
        REQUIRE(test::run({"qemu-img", "create", "-q", "-f", "qcow2", "-b", "disk.qcow2", "-F", "qcow2",
                           (dir / "clone.qcow2").string()})
                    .status == 0);
    }
};

}  // namespace

TEST_CASE("images on an NBD server analyse as the local files do, chains included") {
    Images images;
    const NbdServer server("nbdkit", test::nbdkit_directory_args(images.dir.path().string()));
    for (const char* name :
         {"disk.raw", "disk.qcow2", "disk.vmdk", "disk.vhdx", "hyperv.vhdx", "clone.qcow2"}) {
        INFO(name);
        const Json local = analysis({(images.dir / name).string()});
        const Json remote = analysis({server.uri(name)});
        CHECK(as_local(remote, server, images.dir) == as_local(local, server, images.dir));
        CHECK(remote["image"]["path"] == server.uri(name));
    }
    // The clone's parent was found beside it on the same server.
    const Json clone = analysis({server.uri("clone.qcow2")});
    REQUIRE(clone["image"]["layers"].size() == 2);
    CHECK(clone["image"]["layers"][1]["path"] == server.uri("disk.qcow2"));
    // A --parent given as a URI takes the recorded parent's place.
    const Json given =
        analysis({(images.dir / "clone.qcow2").string(), "--parent", server.uri("disk.qcow2")});
    CHECK(given["image"]["layers"][1]["path"] == server.uri("disk.qcow2"));
}

TEST_CASE("a qemu-nbd export of a qcow2 is its guest disk, allocated where qemu says") {
    Images images;
    const fs::path qcow2 = images.dir / "disk.qcow2";
    const NbdServer server("qemu-nbd", {"--read-only", "--format=qcow2", qcow2.string()});
    const Json remote = analysis({server.uri()});
    const Json local = analysis({qcow2.string()});
    CHECK(remote["image"]["format"] == "raw");
    // The volume is the same volume; its host layers are not (a raw disk over NBD).
    for (const char* key : {"total_clusters", "free_clusters", "files", "free_space", "mft"})
        CHECK(remote["volumes"][0][key] == local["volumes"][0][key]);
    // The oracle: qemu-img map's data extents of the qcow2, which base:allocation reports.
    const test::CommandResult map = test::run({"qemu-img", "map", "--output=json", qcow2.string()});
    REQUIRE(map.status == 0);
    std::uint64_t data = 0;
    for (const Json& e : Json::parse(map.out))
        if (e["data"].get<bool>()) data += e["length"].get<std::uint64_t>();
    CHECK(remote["image"]["layers"][0]["allocated_bytes"].get<std::uint64_t>() == data);
}

TEST_CASE("an nbdkit memory disk is a new thin disk: holes where nothing was written") {
    test::require_tools({"nbdkit"});
    const NbdServer server("nbdkit", {"memory", "64M"});
    // No volume to analyse, as for a new local disk ...
    const test::CommandResult analyzed = test::run_cli({"analyze", server.uri()});
    CHECK(analyzed.status == 2);
    CHECK(analyzed.err.find("no partition table and no NTFS file system found") != std::string::npos);
    // ... but a disk job runs on it, every 64 KiB block a first write: block status says
    // nothing is allocated.
    const test::CommandResult r =
        test::run_cli({"estimate", server.uri(), "--json", "--workload",
                       "fio:rw=write,bs=4k,size=128k,offset=1m", "--zero-block", "64K"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json volume = Json::parse(r.out)["volumes"][0];
    CHECK(volume["no_volume"] == true);
    CHECK(volume["provisioning"]["type"] == "thin");
    CHECK(volume["before"]["ios"] == 32);
    CHECK(volume["before"]["bytes"] == 131072);
    CHECK(volume["before"]["first_writes"] == 2);  // 0 had the export been allocated
}

TEST_CASE("reads over NBD are counted and printed with --stats") {
    Images images;
    const NbdServer server("nbdkit", test::nbdkit_directory_args(images.dir.path().string()));
    const test::CommandResult r = test::run_cli({"analyze", server.uri("disk.raw"), "--stats"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.starts_with("guestfrag: read 0 bytes in 0 requests from files, "));
    CHECK(r.err.find(" requests over NBD") != std::string::npos);
    const test::CommandResult local =
        test::run_cli({"analyze", (images.dir / "disk.raw").string(), "--stats"});
    CHECK(local.err.find("over NBD") != std::string::npos);
    CHECK(local.err.find(", 0 bytes in 0 requests over NBD") != std::string::npos);
}

TEST_CASE("apply, compact and batch read NBD images and write local ones") {
    Images images;
    test::require_tools({"icat"});
    const NbdServer server("nbdkit", test::nbdkit_directory_args(images.dir.path().string()));
    const test::WorkDir out("nbd-out");
    const std::string uri = server.uri("disk.vmdk");
    SECTION("plan and apply into a qcow2 overlay backed by the export") {
        REQUIRE(test::run_cli({"plan", uri, "--strategy", "optimize", "-o", (out / "plan.json").string()})
                    .status == 0);
        const test::CommandResult r =
            test::run_cli({"apply", uri, "--plan", (out / "plan.json").string(), "-o",
                           (out / "new.qcow2").string(), "--output-format", "qcow2"});
        INFO(r.err);
        REQUIRE(r.status == 0);
        const test::CommandResult info =
            test::run({"qemu-img", "info", "--output=json", (out / "new.qcow2").string()});
        CHECK(Json::parse(info.out)["backing-filename"] == uri);
        CHECK(test::run({"qemu-img", "check", (out / "new.qcow2").string()}).status == 0);
    }
    SECTION("compact into a local raw file") {
        const test::CommandResult r =
            test::run_cli({"compact", uri, "-o", (out / "c.raw").string(), "--json"});
        INFO(r.err);
        REQUIRE(r.status == 0);
        const Json j = Json::parse(r.out);
        // The export's block status stands for the host file's allocation.
        CHECK(j["host_bytes"]["input"].get<std::uint64_t>() > 0);
        const Json compacted = analysis({(out / "c.raw").string()});
        const Json local = analysis({(images.dir / "disk.vmdk").string()});
        CHECK(compacted["volumes"][0]["files"] == local["volumes"][0]["files"]);
    }
    SECTION("batch of a list of URIs") {
        std::ofstream(out / "list.txt") << uri << '\n'
                                        << server.uri("disk.qcow2") << '\n'
                                        << server.uri("gone.raw") << '\n';
        const test::CommandResult r =
            test::run_cli({"batch", "--list", (out / "list.txt").string(), "--db", (out / "b.db").string()});
        INFO(r.err);
        CHECK(r.status == 2);  // one image of three is not on the server
        const test::CommandResult rows =
            test::run({"sqlite3", (out / "b.db").string(),
                       "SELECT status || ' ' || datastore FROM images ORDER BY path"});
        CHECK(rows.out ==
              "ok " + nbd_server(uri) + "\nok " + nbd_server(uri) + "\nfailed " + nbd_server(uri) + "\n");
    }
}

TEST_CASE("NBD failures are one line and exit 2, never a hang") {
    Images images;
    const std::string dir = images.dir.path().string();
    SECTION("malformed URIs") {
        require_refusal(test::run_cli({"analyze", "nbd+unix:///disk.raw"}), "nbd+unix:///disk.raw");
        require_refusal(test::run_cli({"analyze", "nbd://[::1/disk.raw"}), "nbd://[::1/disk.raw");
    }
    SECTION("no server at the socket") {
        require_refusal(test::run_cli({"analyze", "nbd+unix:///disk.raw?socket=" + dir + "/none.sock"}),
                        "cannot connect to");
    }
    SECTION("no such export") {
        const NbdServer server("nbdkit", test::nbdkit_directory_args(dir));
        require_refusal(test::run_cli({"analyze", server.uri("absent.raw")}), "no such NBD export");
    }
    SECTION("the server fails every read") {
        const NbdServer server(
            "nbdkit", test::nbdkit_directory_args(dir, {"error"}, {"error=EIO", "error-pread-rate=100%"}));
        require_refusal(test::run_cli({"analyze", server.uri("disk.raw")}), "Input/output error");
    }
    SECTION("the server does not answer a read in time") {
        const NbdServer server("nbdkit", test::nbdkit_directory_args(dir, {"delay"}, {"rdelay=30"}));
        require_refusal(test::run_cli({"analyze", server.uri("disk.raw"), "--nbd-timeout", "0.5"}),
                        "did not answer within 500 ms");
    }
    SECTION("a socket that accepts but never speaks") {
        const std::string path = dir + "/mute.sock";
        const UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM, 0));
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        REQUIRE(path.size() < sizeof address.sun_path);
        path.copy(address.sun_path, path.size());
        REQUIRE(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(listener.get(), 4) == 0);
        require_refusal(
            test::run_cli({"analyze", "nbd+unix:///disk.raw?socket=" + path, "--nbd-timeout", "0.5"}),
            "did not finish the handshake within 500 ms");
    }
    SECTION("the server goes away in the middle of the reads") {
        const std::string log = dir + "/requests.log";
        NbdServer server(
            "nbdkit", test::nbdkit_directory_args(dir, {"log", "delay"}, {"logfile=" + log, "rdelay=200ms"}));
        const fs::path err = images.dir / "err.txt";
        // Begun once the first read is on its way: the handshake is behind us.
        const int pid = test::start_cli_until({"analyze", server.uri("disk.raw")}, err, [&] {
            return test::file_contents(log).find(" Read ") != std::string::npos;
        });
        server.kill();
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        const std::string text = test::file_contents(err);
        // Reads in flight end with ENOTCONN, or the next request finds the connection gone.
        require_refusal({WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), "", text},
                        "connect");
    }
    SECTION("an export shorter than its container says") {
        const NbdServer server("nbdkit",
                               {"--filter=truncate", "file", "file=" + dir + "/disk.qcow2", "truncate=128K"});
        const test::CommandResult r = test::run_cli({"analyze", server.uri()});
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find('\n') == r.err.size() - 1);
    }
    SECTION("TLS is required and not offered, or offered with the right key") {
        const std::string keys = dir + "/keys.psk";
        std::ofstream(keys) << "alice:8a3f2c1d9e7b6a5f4c3d2e1f0a9b8c7d\n";
        const NbdServer server("nbdkit", {"--tls=require", "--tls-psk=" + keys, "file", "dir=" + dir});
        require_refusal(test::run_cli({"analyze", server.uri("disk.raw")}), "cannot connect to");
        const std::string tls =
            "nbds+unix://alice@/disk.raw?socket=" + server.socket() + "&tls-psk-file=" + keys;
        const test::CommandResult r = test::run_cli({"analyze", tls, "--json"});
        INFO(r.err);
        REQUIRE(r.status == 0);
        CHECK(Json::parse(r.out)["volumes"][0]["files"] ==
              analysis({dir + "/disk.raw"})["volumes"][0]["files"]);
    }
}

TEST_CASE("an NBD URI's parts: siblings, server and export") {
    const std::string child = "nbd+unix:///vms/a/child.qcow2?socket=/run/n.sock";
    CHECK(is_nbd_uri(child));
    CHECK(is_nbd_uri("nbds://host:10809/x"));
    CHECK_FALSE(is_nbd_uri("/vms/nbd://x"));
    CHECK_FALSE(is_nbd_uri("nbd:/x"));
    CHECK(sibling_path(child, "base.qcow2") == "nbd+unix:///vms/a/base.qcow2?socket=/run/n.sock");
    CHECK(sibling_path(child, "../b/base.qcow2") == "nbd+unix:///vms/b/base.qcow2?socket=/run/n.sock");
    // ".." never climbs above the export root.
    CHECK(sibling_path("nbd://h/child", "../../base") == "nbd://h/base");
    CHECK(sibling_path("nbd://h:10809", "base") == "nbd://h:10809/base");
    CHECK(sibling_path("/vms/a/child.vmdk", "child-flat.vmdk") == "/vms/a/child-flat.vmdk");
    CHECK(sibling_path("child.vmdk", "child-flat.vmdk") == "child-flat.vmdk");
    CHECK(nbd_export_name(child) == "vms/a/child.qcow2");
    CHECK(nbd_export_name("nbd://h") == "");
    CHECK(location_file_name(child) == "child.qcow2");
    CHECK(location_file_name("/vms/x.vmdk") == "x.vmdk");
    CHECK(nbd_server(child) == "nbd+unix:///?socket=/run/n.sock");
    CHECK(nbd_server("nbds://alice@host:10809/disk?tls-psk-file=/k&x=1") == "nbds://host:10809/");
    CHECK(nbd_server("nbd+unix:///d?tls-username=a&socket=/s&x=1") == "nbd+unix:///?socket=/s");
}
