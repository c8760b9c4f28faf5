// SPDX-License-Identifier: GPL-2.0-or-later
// Plan files as a hostile user gives them: a directory, a FIFO nobody writes to or a writer
// that never writes, a device that never ends; and a pipe and /dev/stdin, which must work.
// Every command that reads a plan answers with one line and exit 2, at once or after the
// pipe time-out, never a hang.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/sanitizer.hpp"
#include "core/plan/plan_io.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

MkImageOptions volume() {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = "none";
    o.files = 100;
    o.seed = 61;
    return o;
}

/// Every command that takes a plan, given `plan`.
std::vector<std::vector<std::string>> plan_readers(const fs::path& image, const fs::path& plan,
                                                   const fs::path& out) {
    return {{"apply", image.string(), "--plan", plan.string(), "-o", out.string()},
            {"plan", image.string(), "--check", plan.string()},
            {"estimate", image.string(), "--plan", plan.string()},
            {"impact", image.string(), "--plan", plan.string()},
            {"schedule", plan.string(), "--rate", "20MiB/s"}};
}

// A hostile input may cost 256 MB at most (docs/design.md §2). Under AddressSanitizer the
// allocator adds its 64 MB quarantine, redzones and shadow to every allocation: a million
// moves held as values (72 MB in the release build) then peak near 410 MB, and the bound
// for that case is twice the release one. The padded plan holds nothing: 256 MB in both.
#if GUESTFRAG_ADDRESS_SANITIZER
constexpr long kMillionMovesBoundKib = 512 * 1024;
#else
constexpr long kMillionMovesBoundKib = 256 * 1024;
#endif

void refused(const test::CommandResult& r, const fs::path& plan, const std::string& says) {
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err == "guestfrag: error: " + plan.string() + ": " + says + "\n");
}

}  // namespace

TEST_CASE("a plan that is a directory or a FIFO nobody writes to is refused by every command at once",
          "[plan][hostile]") {
    const fs::path image = test::generated_image("plan-file", volume());
    const test::WorkDir dir("plan-file");
    const fs::path folder = dir / "plan.d";
    fs::create_directory(folder);
    const fs::path fifo = dir / "plan.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (const auto& args : plan_readers(image, folder, dir / "out.img")) {
        INFO(args[0]);
        refused(test::run_cli(args), folder, "the plan is a directory, not a plan file");
    }
    for (const auto& args : plan_readers(image, fifo, dir / "out.img")) {
        INFO(args[0]);
        refused(test::run_cli(args), fifo, "the plan is a pipe or FIFO that nothing wrote to");
    }
    // A device that never ends is read only as far as its first byte that is not JSON.
    const auto zero =
        test::run_cli({"apply", image.string(), "--plan", "/dev/zero", "-o", (dir / "out.img").string()});
    CHECK(zero.status == 2);
    CHECK(zero.err.starts_with("guestfrag: error: /dev/zero: plan is not valid JSON"));
    CHECK(!fs::exists(dir / "out.img"));
}

TEST_CASE(
    "a plan from a pipe or /dev/stdin is read, and a writer that never writes is given up after the time-out",
    "[plan][hostile]") {
    const fs::path image = test::generated_image("plan-file", volume());
    const test::WorkDir dir("plan-pipe");
    const fs::path plan = dir / "p.json";
    REQUIRE(test::run_cli({"plan", image.string(), "-o", plan.string()}).status == 0);
    const std::string cli = GUESTFRAG_CLI;
    for (const std::string& line :
         {"cat '" + plan.string() + "' | '" + cli + "' plan '" + image.string() + "' --check /dev/stdin",
          "'" + cli + "' plan '" + image.string() + "' --check <(cat '" + plan.string() + "')"}) {
        INFO(line);
        const auto r = test::run({"bash", "-c", line});
        INFO(r.err);
        CHECK(r.status == 0);
    }

    // A FIFO held open for writing (O_RDWR does not wait for a reader) that gets no byte.
    const fs::path fifo = dir / "silent.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const int writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(writer >= 0);
    const auto started = std::chrono::steady_clock::now();
    try {
        (void)read_plan(fifo.string(), std::chrono::milliseconds(300));
        FAIL("a silent pipe was read as a plan");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Io);
        CHECK(std::string(e.what()) ==
              "no plan data arrived for 300 ms from the pipe or FIFO it is read from");
    }
    CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(300));
    ::close(writer);
}

TEST_CASE("a plan of a million moves, or behind 300 MiB of white space, is read in bounded memory",
          "[plan][hostile]") {
    const fs::path image = test::generated_image("plan-file", volume());
    const test::WorkDir dir("plan-size");
    const fs::path plan = dir / "p.json";
    REQUIRE(test::run_cli({"plan", image.string(), "-o", plan.string()}).status == 0);
    const std::string text = test::file_contents(plan);
    const std::size_t moves_at = text.find("\"moves\": [");
    const std::size_t moves_end = text.find(']', moves_at);
    REQUIRE(moves_at != std::string::npos);
    REQUIRE(moves_end != std::string::npos);

    // The plan's identity with a million moves of one stream: valid JSON, wrong from move 1.
    const fs::path big = dir / "big.json";
    {
        std::ofstream out(big);
        out << text.substr(0, moves_at) << "\"moves\": [";
        for (int i = 0; i < 1'000'000; ++i)
            out << (i == 0 ? "\n" : ",\n") << R"({"mft_record": 64, "stream": "$DATA", "vcn": )" << i
                << R"(, "from_lcn": 100, "to_lcn": 200, "clusters": 1})";
        out << text.substr(moves_end);
    }
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"schedule", big.string(), "--rate", "20MiB/s", "--json"},
          std::vector<std::string>{"plan", image.string(), "--check", big.string()},
          std::vector<std::string>{"apply", image.string(), "--plan", big.string(), "-o",
                                   (dir / "o.img").string()}}) {
        INFO(args[0]);
        const auto r = test::run_cli_measured(args);
        INFO(r.err);
        CHECK(r.peak_rss_kib > 0);
        CHECK(r.peak_rss_kib <= kMillionMovesBoundKib);
        CHECK(r.status == (args[0] == "schedule" ? 0 : 2));
    }
    CHECK(!fs::exists(dir / "o.img"));

    // The same plan as written, behind 300 MiB of spaces: checked as it is (9 MB in the
    // release build; 531 MB when the parser kept the padding).
    const fs::path padded = dir / "padded.json";
    {
        std::ofstream out(padded);
        const std::string spaces(1 << 20, ' ');
        for (int i = 0; i < 300; ++i) out << spaces;
        out << text;
    }
    const auto r = test::run_cli_measured({"plan", image.string(), "--check", padded.string()});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.peak_rss_kib <= 256 * 1024);
}

TEST_CASE("a plan's moves are read member by member: members of any shape beside them are ignored, the last "
          "of a repeated one counts, and a move that is no object or holds a wrong type is refused",
          "[plan][hostile]") {
    const test::WorkDir dir("plan-members");
    const auto read = [&](const std::string& moves, const std::string& skipped = "[]") {
        const fs::path path = dir / "p.json";
        std::ofstream(path) << R"({"schema": "guestfrag.plan.v1", "image": {"path": "x.img", "virtual_size": 1},)"
                            << R"( "partition": 1, "identity": {"volume_serial": "a1", "cluster_size": 4096,)"
                            << R"( "total_clusters": 64, "allocation_digest": "b2"}, "strategy": "defrag",)"
                            << R"( "moves": )" << moves << R"(, "skipped": )" << skipped << "}";
        return read_plan(path.string());
    };
    const auto refusal = [&](const std::string& moves, const std::string& skipped = "[]") {
        try {
            (void)read(moves, skipped);
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Corrupt);
            return std::string(e.what());
        }
        return std::string("accepted");
    };

    const Plan plan = read(
        R"([{"note": {"a": [1, {"vcn": 99}], "b": null}, "mft_record": 64, "stream": "$DATA", "vcn": 2,)"
        R"( "from_lcn": 10, "to_lcn": 20, "clusters": 0, "clusters": 3, "more": [[], {}]},)"
        R"( {"clusters": 1, "to_lcn": 7, "from_lcn": 5, "vcn": 0, "stream": "$DATA:ads", "mft_record": 65}])",
        R"([{"mft_record": 66, "stream": "$DATA", "reason": "pinned", "x": [{}]}])");
    CHECK(plan.moves == std::vector<Move>{{64, "$DATA", 2, 10, 20, 3}, {65, "$DATA:ads", 0, 5, 7, 1}});
    CHECK(plan.skipped == std::vector<Plan::Skipped>{{66, "$DATA", "pinned"}});
    CHECK(plan.identity.volume_serial == 0xa1);
    CHECK(plan.identity.allocation_digest == 0xb2);

    const std::string move = R"("mft_record": 64, "stream": "$DATA", "from_lcn": 10, "to_lcn": 20, "clusters": 3)";
    CHECK(read("[{" + move + R"(, "vcn": 1}])").moves.size() == 1);
    CHECK(refusal("[{" + move + R"(, "vcn": {"a": 1}}])") == "move 0: \"vcn\" must be an integer from 0 to 2^62");
    CHECK(refusal("[{" + move + R"(, "vcn": 1}, {)" + move + R"(, "vcn": [2]}])") ==
          "move 1: \"vcn\" must be an integer from 0 to 2^62");
    CHECK(refusal("[{" + move + "}]") == "move 0: missing field \"vcn\"");
    CHECK(refusal("[{" + move + R"(, "vcn": 1, "stream": ""}])") == "move 0: \"stream\" must be a non-empty string");
    CHECK(refusal("[{" + move + R"(, "vcn": 1}, 5])") == "move 1: must be an object");
    CHECK(refusal(R"([[{"vcn": 1}]])") == "move 0: must be an object");
    CHECK(refusal("{}") == "plan: \"moves\" must be an array");
    CHECK(refusal("[]", "[null]") == "skipped 0: must be an object");
    CHECK(refusal("[]", R"([{"mft_record": 1, "stream": "$DATA"}])") == "skipped 0: missing field \"reason\"");
}

TEST_CASE(
    "a plan's partition is known before its moves are read, and a plan read beside apply's analysis "
    "still answers for itself first",
    "[plan][hostile]") {
    const test::WorkDir dir("plan-pending");
    const auto write = [&](const std::string& name, const std::string& partitions, const std::string& moves) {
        const fs::path path = dir / name;
        std::ofstream(path)
            << R"({"schema": "guestfrag.plan.v1", "image": {"path": "x.img", "virtual_size": 1},)"
            << partitions << R"( "identity": {"volume_serial": "a1", "cluster_size": 4096,)"
            << R"( "total_clusters": 64, "allocation_digest": "b2"}, "strategy": "defrag",)"
            << R"( "moves": )" << moves << "}";
        return path.string();
    };
    const std::string move =
        R"({"mft_record": 64, "stream": "$DATA", "vcn": 0, "from_lcn": 10, "to_lcn": 20,)"
        R"( "clusters": 3})";
    const std::string good = write("good.json", R"( "partition": 2,)", "[" + move + "]");
    // Told once, with the value, before the move that follows is refused.
    std::vector<int> told;
    try {
        (void)read_plan(write("bad-move.json", R"( "partition": 2,)", "[" + move + ", 5]"), kPlanPipeTimeout,
                        [&](int partition) { told.push_back(partition); });
        FAIL("a move that is no object was read");
    } catch (const Error& e) {
        CHECK(std::string(e.what()) == "move 1: must be an object");
    }
    CHECK(told == std::vector<int>{2});
    told.clear();
    (void)read_plan(write("bad-partition.json", R"( "partition": -1, "partition": 3,)", "[]"),
                    kPlanPipeTimeout, [&](int partition) { told.push_back(partition); });
    CHECK(told == std::vector<int>{3});  // a value no partition has is not told

    const auto reader = [](std::string path) {
        return [path = std::move(path)](const std::function<void(int)>& partition_read) {
            return read_plan(path, kPlanPipeTimeout, partition_read);
        };
    };
    PendingPlan pending(reader(good));
    CHECK(pending.partition() == 2);
    CHECK(pending.take().moves == std::vector<Move>{{64, "$DATA", 0, 10, 20, 3}});

    PendingPlan broken(reader(write("broken.json", R"( "partition": "one",)", "[]")));
    CHECK_THROWS_WITH(broken.partition(), "plan: \"partition\" must be an integer from 0 to 2^62");
    CHECK_THROWS_WITH(broken.take(), "plan: \"partition\" must be an integer from 0 to 2^62");

    // The document's last value is the plan's: the analysis made for the first is refused.
    PendingPlan twice(reader(write("twice.json", R"( "partition": 1, "partition": 2,)", "[]")));
    CHECK(twice.partition() == 1);
    CHECK_THROWS_WITH(twice.take(), "plan: \"partition\" is given more than once, as 1 and 2");

    // apply reads the plan beside the analysis: a plan refused after its partition is the
    // answer, also for an image that cannot be opened.
    const fs::path late = write("late.json", R"( "partition": 1,)", "[" + move + ", 5]");
    refused(test::run_cli({"apply", (dir / "missing.img").string(), "--plan", late.string(), "-o",
                           (dir / "out.img").string()}),
            late, "move 1: must be an object");
    CHECK(!fs::exists(dir / "out.img"));
}

TEST_CASE("a plan's moves are written as the JSON library writes them, whatever their labels hold",
          "[plan][json]") {
    Plan plan;
    plan.strategy = "defrag";
    const std::vector<std::string> labels = {"$DATA", "$INDEX_ALLOCATION:$I30", "$DATA:q\"b\\s/",
                                             "$DATA:ctl\x01\n\x7f", "$DATA:é€",
                                             "$DATA:bad\xff\xc3"};
    for (std::size_t i = 0; i < labels.size(); ++i)
        plan.moves.push_back({std::uint64_t{1} << 47, labels[i], static_cast<std::int64_t>(i), -1,
                              std::int64_t{1} << 62, 7});
    const std::string text = plan_to_json(plan, VolumeMap{});
    std::size_t at = text.find("\"moves\": [");
    REQUIRE(at != std::string::npos);
    for (const Move& m : plan.moves) {
        const nlohmann::ordered_json object = {{"mft_record", m.mft_record}, {"stream", m.stream},
                                               {"vcn", m.vcn},               {"from_lcn", m.from_lcn},
                                               {"to_lcn", m.to_lcn},         {"clusters", m.clusters}};
        const std::string line =
            "\n    " + object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        INFO(line);
        at = text.find(line, at);
        CHECK(at != std::string::npos);
    }
}
