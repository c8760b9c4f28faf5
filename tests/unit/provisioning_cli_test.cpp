// SPDX-License-Identifier: GPL-2.0-or-later
// `analyze` and `estimate` with provisioning: the per-layer report, eager/lazy/thin side by
// side in the guestfrag.estimate.v1 document, and the options' bad-input rules.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/image/open_image.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
using Json = nlohmann::json;

TEST_CASE("analyze reports each layer's provisioning", "[cli][json][provisioning]") {
    const auto image = test::small_cli_image();
    const LayerProvisioning detected = open_image(image.string())->layers().front().provisioning;
    const auto r = test::run_cli({"analyze", image.string(), "--json"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json p = Json::parse(r.out)["image"]["layers"][0]["provisioning"];
    CHECK(p["type"] == std::string(provisioning_name(detected.type)));
    CHECK(p["zero_block"] == detected.zero_block);
    CHECK(p["assumed"] == detected.assumed);
    CHECK(p["basis"] == detected.basis);

    const auto set = test::run_cli({"analyze", image.string(), "--json", "--provisioning", "0=lazy",
                                    "--zero-block", "1M"});
    REQUIRE(set.status == 0);
    const Json q = Json::parse(set.out)["image"]["layers"][0]["provisioning"];
    CHECK(q["type"] == "lazy");
    CHECK(q["zero_block"] == 1 << 20);
    CHECK(q["assumed"] == false);
    CHECK(q["basis"] == "set by --provisioning");

    const auto text = test::run_cli({"analyze", image.string(), "--provisioning", "thin"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("provisioning") != std::string::npos);
    CHECK(text.out.find("thin, zeroing block") != std::string::npos);
}

TEST_CASE("estimate shows eager, lazy and thin side by side", "[cli][json][estimate][provisioning]") {
    const auto image = test::small_cli_image();
    const auto r = test::run_cli({"estimate", image.string(), "--json", "--workload", "write:40", "--provisioning",
                                  "thin", "--zero-block", "64K"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    CHECK(doc["preset"] == "default");
    CHECK(doc["device_models"]["array"]["first_write"]["allocate_seconds"].get<double>() == Approx(2.856e-3));
    const Json& v = doc["volumes"][0];
    CHECK(v["provisioning"]["type"] == "thin");
    CHECK(v["provisioning"]["zero_block"] == 65536);
    const Json& b = v["before"];
    CHECK(b["writes"] == b["ios"]);
    CHECK(b["zero_block"] == 65536);
    const auto first = b["first_writes"].get<std::uint64_t>();
    // 40 new files in never-written free space of a freshly made image.
    CHECK(first > 0);
    REQUIRE(b["provisioned"].size() == 3);
    CHECK(b["provisioned"][0]["type"] == "eager");
    CHECK(b["provisioned"][1]["type"] == "lazy");
    CHECK(b["provisioned"][2]["type"] == "thin");
    CHECK(b["provisioned"][0]["first_writes"] == 0);
    CHECK(b["provisioned"][1]["first_writes"] == first);
    CHECK(b["provisioned"][2]["first_writes"] == first);
    const auto ios = b["ios"].get<double>();
    for (const char* model : {"hdd", "ssd", "array"}) {
        const double eager = b["provisioned"][0]["models"][model]["device_seconds"].get<double>();
        const double lazy = b["provisioned"][1]["models"][model]["device_seconds"].get<double>();
        const double thin = b["provisioned"][2]["models"][model]["device_seconds"].get<double>();
        CHECK(eager == Approx(b["device_seconds"][model].get<double>()));
        CHECK(lazy > eager);
        CHECK(thin > lazy);
        const Json& m = b["provisioned"][2]["models"][model];
        CHECK(m["iops"].get<double>() == Approx(ios / thin));
        CHECK(m["mean_latency_seconds"].get<double>() == Approx(thin / ios));
        CHECK(m["mb_per_second"].get<double>() == Approx(b["bytes"].get<double>() / 1e6 / thin));
    }

    // A scan only reads: no first writes, the three agree.
    const auto scan = test::run_cli({"estimate", image.string(), "--json", "--preset", "3par-format"});
    REQUIRE(scan.status == 0);
    const Json s = Json::parse(scan.out);
    CHECK(s["preset"] == "3par-format");
    CHECK(s["device_models"]["array"]["write_transfer_bytes_per_second"].get<double>() == Approx(80.6e6).epsilon(0.01));
    const Json& sb = s["volumes"][0]["before"];
    CHECK(sb["writes"] == 0);
    CHECK(sb["first_writes"] == 0);
    CHECK(sb["provisioned"][2]["models"]["hdd"]["device_seconds"].get<double>() ==
          Approx(sb["device_seconds"]["hdd"].get<double>()));

    const auto text = test::run_cli({"estimate", image.string(), "--workload", "write:40"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("Eager, lazy and thin") != std::string::npos);
    CHECK(text.out.find("First writes") != std::string::npos);
}

TEST_CASE("provisioning options refuse bad values", "[cli][estimate][provisioning]") {
    const auto image = test::small_cli_image();
    for (const std::vector<std::string>& bad :
         {std::vector<std::string>{"--provisioning", "thick"}, {"--provisioning", "0=foo"}, {"--provisioning", "=thin"},
          {"--zero-block", "1000"}, {"--zero-block", "0"}, {"--zero-block", "lots"}, {"--preset", "fast"}}) {
        std::vector<std::string> args{"estimate", image.string()};
        args.insert(args.end(), bad.begin(), bad.end());
        const auto r = test::run_cli(args);
        INFO(bad[0] << " " << bad[1]);
        CHECK(r.status == 1);
        CHECK(r.err.find(bad[0]) != std::string::npos);
    }
    // A layer the image does not have: bad input, one line, exit 2.
    const auto deep = test::run_cli({"analyze", image.string(), "--provisioning", "3=thin"});
    CHECK(deep.status == 2);
    CHECK(deep.err.find("--provisioning names layer 3") != std::string::npos);
    CHECK(std::count(deep.err.begin(), deep.err.end(), '\n') == 1);
}

TEST_CASE("estimate, impact and report take device parameters from a file (--device-model)", "[cli][estimate][device-model]") {
    const auto image = test::small_cli_image();
    const auto model = test::scratch_dir() / "device-model-ssd.json";
    {
        std::ofstream(model) << R"({"ssd": {"io_latency_seconds": 0.001, "transfer_bytes_per_second": 1e8},
                                   "array": {"random_io_seconds": 0.002}})";
    }
    const auto plain = test::run_cli({"estimate", image.string(), "--json", "--preset", "3par-format"});
    const auto r = test::run_cli(
        {"estimate", image.string(), "--json", "--preset", "3par-format", "--device-model", model.string()});
    INFO(r.err);
    REQUIRE(plain.status == 0);
    REQUIRE(r.status == 0);
    const Json doc = Json::parse(r.out);
    const Json before = Json::parse(plain.out);
    CHECK(doc["preset"] == "3par-format");
    CHECK(doc["device_model"] == model.string());
    CHECK(doc["device_models"]["ssd"]["io_latency_seconds"] == 0.001);
    CHECK(doc["device_models"]["array"]["random_io_seconds"] == 0.002);
    // What the file leaves out stays the preset's.
    CHECK(doc["device_models"]["array"]["write_transfer_bytes_per_second"] ==
          before["device_models"]["array"]["write_transfer_bytes_per_second"]);
    CHECK(doc["device_models"]["hdd"] == before["device_models"]["hdd"]);
    // The SSD model (docs/estimate.md): a scan only reads, each read costs the latency plus its
    // bytes at the transfer rate.
    const Json& b = doc["volumes"][0]["before"];
    CHECK(b["writes"] == 0);
    CHECK(b["device_seconds"]["ssd"].get<double>() ==
          Approx(b["ios"].get<double>() * 0.001 + b["bytes"].get<double>() / 1e8));
    CHECK(b["device_seconds"]["hdd"] == before["volumes"][0]["before"]["device_seconds"]["hdd"]);
    CHECK(b["device_seconds"]["array"].get<double>() >
          before["volumes"][0]["before"]["device_seconds"]["array"].get<double>());

    // Bad files are usage errors naming the file and the key, on every command that takes one.
    const auto bad = test::scratch_dir() / "device-model-bad.json";
    {
        std::ofstream(bad) << R"({"ssd": {"io_latency": 0.001}})";
    }
    // A FIFO nobody writes to ends at once, not in a hang.
    const auto fifo = test::scratch_dir() / ("device-model-fifo-" + std::to_string(::getpid()));
    std::filesystem::remove(fifo);
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const auto not_json = test::scratch_dir() / "device-model-not-json.json";
    {
        std::ofstream(not_json) << "ssd: fast";
    }
    for (const auto& [args, reason] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"estimate", image.string(), "--device-model", bad.string()}, "ssd.io_latency: no such device model"},
             {{"report", image.string(), "--device-model", bad.string()}, "ssd.io_latency: no such device model"},
             {{"impact", image.string(), "--plan", "/nonexistent/plan.json", "--device-model", bad.string()},
              "ssd.io_latency: no such device model"},
             {{"estimate", image.string(), "--device-model", not_json.string()}, "the device model is not valid JSON"},
             {{"estimate", image.string(), "--device-model", "/nonexistent/model.json"},
              "cannot open device model: No such file or directory"},
             {{"estimate", image.string(), "--device-model", test::scratch_dir().string()},
              "the device model is a directory"},
             {{"estimate", image.string(), "--device-model", fifo.string()},
              "the device model is a pipe or FIFO that nothing wrote to"}}) {
        const auto res = test::run_cli(args);
        INFO(args[0] << ": " << res.err);
        CHECK(res.status == 1);
        CHECK(res.err.find(reason) != std::string::npos);
        CHECK(res.err.starts_with("guestfrag: error: " + args.back() + ": "));
        CHECK(std::count(res.err.begin(), res.err.end(), '\n') == 1);
    }
    std::filesystem::remove(fifo);
}

TEST_CASE("estimate fio: a job on the disk, and bad options exit 1 naming the option", "[cli][estimate][fio]") {
    const auto image = test::small_cli_image();
    const auto ok = test::run_cli(
        {"estimate", image.string(), "--json", "--workload", "fio:rw=randwrite,bs=4k,size=1m,randseed=5"});
    INFO(ok.err);
    REQUIRE(ok.status == 0);
    const Json doc = Json::parse(ok.out);
    CHECK(doc["workload"] == "fio:rw=randwrite,bs=4k,size=1m,randseed=5");
    const Json& b = doc["volumes"][0]["before"];
    CHECK(b["ios"] == 256);
    CHECK(b["writes"] == 256);
    CHECK(b["bytes"] == 1 << 20);

    for (const auto& [options, key] :
         {std::pair<std::string, std::string>{"iodepth=4", "iodepth"}, {"size=0", "size"}, {"size=-1", "size"},
          {"bs=1000", "bs"}, {"size=1g", "size"}, {"offset=1g", "offset"}, {"size=1g,target=file", "size"}}) {
        const auto r = test::run_cli({"estimate", image.string(), "--workload", "fio:" + options});
        INFO(options << ": " << r.err);
        CHECK(r.status == 1);
        CHECK(r.err.find("fio option '" + key + "'") != std::string::npos);
        // One line says what is wrong (CLI11 adds its "Run with --help" hint to usage errors).
        CHECK(r.err.substr(0, r.err.find('\n')).find(key) != std::string::npos);
    }
}

TEST_CASE("estimate: a fio job on the disk runs on a new disk with no file system", "[cli][estimate][fio]") {
    test::require_tools({"qemu-img", "sfdisk"});
    const auto dir = test::scratch_dir();
    const auto qcow2 = dir / "fio-fresh.qcow2";
    const auto vmdk = dir / "fio-fresh.vmdk";
    const auto raw = dir / "fio-linux-partition.raw";
    std::filesystem::remove(qcow2);
    std::filesystem::remove(vmdk);
    std::filesystem::remove(raw);
    REQUIRE(test::run({"qemu-img", "create", "-q", "-f", "qcow2", qcow2.string(), "1G"}).status == 0);
    REQUIRE(test::run({"qemu-img", "create", "-q", "-f", "vmdk", vmdk.string(), "100G"}).status == 0);
    REQUIRE(test::run({"qemu-img", "create", "-q", "-f", "raw", raw.string(), "16M"}).status == 0);
    // A partition table whose one partition holds no NTFS (a Linux partition, never formatted).
    REQUIRE(test::run({"sh", "-c", "printf 'label: dos\\n,,83\\n' | sfdisk -q " + raw.string()}).status == 0);

    // 32 sequential writes of 4 KiB from 1 MiB: 128 KiB, two 64 KiB qcow2 clusters (and VMDK
    // grains) never written before, so two first writes on thin storage and none on eager.
    for (const auto& image : {qcow2, vmdk, raw}) {
        const auto r = test::run_cli({"estimate", image.string(), "--json", "--workload",
                                      "fio:rw=write,bs=4k,size=128k,offset=1m", "--zero-block", "64K"});
        INFO(image << ": " << r.err);
        REQUIRE(r.status == 0);
        const Json doc = Json::parse(r.out);
        REQUIRE(doc["volumes"].size() == 1);
        const Json& v = doc["volumes"][0];
        CHECK(v["partition"] == 0);
        CHECK(v["no_volume"] == true);
        CHECK(v["before"]["ios"] == 32);
        CHECK(v["before"]["writes"] == 32);
        CHECK(v["before"]["bytes"] == 128 * 1024);
        CHECK(v["before"]["provisioned"][0]["first_writes"] == 0);
        if (image != raw) CHECK(v["before"]["first_writes"] == 2);
    }
    const auto text = test::run_cli({"estimate", vmdk.string(), "--workload", "fio:rw=randread,bs=4k,number_ios=100"});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("The whole disk (no NTFS volume read)") != std::string::npos);

    // What needs a file system still does: one line, exit 2; a job that does not fit, exit 1.
    const auto scan = test::run_cli({"estimate", qcow2.string(), "--workload", "scan"});
    CHECK(scan.status == 2);
    CHECK(scan.err.find("no partition table and no NTFS file system found") != std::string::npos);
    const auto file = test::run_cli({"estimate", qcow2.string(), "--workload", "fio:rw=write,bs=4k,size=1m,target=file"});
    CHECK(file.status == 2);
    const auto big = test::run_cli({"estimate", qcow2.string(), "--workload", "fio:rw=write,bs=4k,size=2g"});
    CHECK(big.status == 1);
    CHECK(big.err.find("fio option 'size'") != std::string::npos);
    for (const auto& image : {qcow2, vmdk, raw}) std::filesystem::remove(image);
}
