// SPDX-License-Identifier: GPL-2.0-or-later
// The copy model (docs/copy.md): offload commands, host-side copy IOs and the re-laid state,
// checked on hand-computed layers, against `qemu-img map --output=json` offsets of images
// qemu wrote out of order (its own count, independent of our readers), against the count
// on the `qemu-img convert` output of the same image, and the physical level against
// `filefrag -v`.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analyzers/copy_cost.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/open_image.hpp"
#include "core/image/unique_fd.hpp"
#include "core/impact/impact.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/vhdx_writer.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr std::uint64_t K = 1024, M = K * K;

ByteSet::interval_type bytes(std::uint64_t lo, std::uint64_t hi) {
    return ByteSet::interval_type::right_open(lo, hi);
}

/// A layer of 64 KiB granules with `runs` placed and `compressed` stored without a place.
Layer layer_of(const std::vector<HostExtent>& runs, const ByteSet& compressed = {}) {
    Layer layer;
    layer.granule_size = 64 * K;
    layer.host_extents = runs;
    for (const HostExtent& e : runs)
        layer.allocated.add(bytes(e.virtual_offset, e.virtual_offset + e.length));
    layer.allocated += compressed;
    return layer;
}

const OffloadFigures& at(const CopyFigures& f, std::uint64_t transfer) {
    for (const OffloadFigures& o : f.offload)
        if (o.transfer_size == transfer) return o;
    FAIL("no figures for transfer size " << transfer);
    throw std::logic_error("unreachable");
}

/// Offload commands counted straight from qemu's map of depth-0 data (of every depth with
/// `chain`: what qemu reads each range from): runs joined where both the disk offset and
/// the file offset continue in the same file, each cut at `transfer`. `file_of` names the
/// file of a layer a disk offset lies in (the descriptor's extents).
std::uint64_t qemu_commands(const std::vector<test::QemuExtent>& map, std::uint64_t transfer,
                            const std::function<std::uint64_t(std::uint64_t)>& file_of, bool chain = false) {
    std::vector<std::pair<std::uint64_t, HostExtent>> runs;  // (file, run)
    for (const auto& e : map) {
        // Flat files' holes and zero clusters are "zero" to qemu: nothing to copy.
        if ((e.depth != 0 && !chain) || !e.data || e.zero || !e.offset) continue;
        const std::uint64_t file = e.depth * 1000 + file_of(e.start);
        if (!runs.empty() && runs.back().first == file &&
            runs.back().second.virtual_offset + runs.back().second.length == e.start &&
            runs.back().second.file_offset + runs.back().second.length == *e.offset)
            runs.back().second.length += e.length;
        else
            runs.push_back({file, {e.start, *e.offset, e.length, 0}});
    }
    std::uint64_t commands = 0;
    for (const auto& [file, run] : runs) commands += (run.length + transfer - 1) / transfer;
    return commands;
}

std::uint64_t one_file(std::uint64_t) { return 0; }

/// Offload commands of the data qemu maps in any layer, laid out contiguously.
std::uint64_t qemu_relaid_commands(const std::vector<test::QemuExtent>& map, std::uint64_t transfer) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (const auto& e : map) {
        if (!e.data || e.zero) continue;
        if (!ranges.empty() && ranges.back().second == e.start)
            ranges.back().second += e.length;
        else
            ranges.push_back({e.start, e.start + e.length});
    }
    std::uint64_t commands = 0;
    for (const auto& [lo, hi] : ranges) commands += (hi - lo + transfer - 1) / transfer;
    return commands;
}

/// 48 writes of 512 KiB at shuffled 512 KiB slots of a 64 MiB disk: qemu allocates in
/// write order, so neighbours on the disk lie apart in the file.
std::vector<std::string> shuffled_writes() {
    std::vector<std::uint64_t> slots(128);
    for (std::uint64_t i = 0; i < slots.size(); ++i) slots[i] = i;
    std::mt19937 random(20261124);
    std::shuffle(slots.begin(), slots.end(), random);
    slots.resize(48);
    std::vector<std::string> writes;
    for (const std::uint64_t s : slots)
        writes.push_back("write -P " + std::to_string(1 + s % 250) + " " + std::to_string(s * 512 * K) +
                         " 512K");
    return writes;
}

}  // namespace

TEST_CASE("offload commands, averages and times of a hand-built layer", "[analyzers][copy]") {
    ByteSet compressed;
    compressed.add(bytes(9 * M + 512 * K, 9 * M + 704 * K));  // three whole 64 KiB clusters
    compressed.add(bytes(20 * M + 32 * K, 20 * M + 96 * K));  // straddles two clusters
    const Layer layer = layer_of({{0, 1 * M, 5 * M, 0},
                                  {5 * M, 10 * M, 2 * M, 0},  // continues A on the disk only
                                  {8 * M, 12 * M, 1 * M, 0},  // continues B in the file only
                                  {9 * M, 0, 512 * K, 1}},    // continues C on the disk, other file
                                 compressed);
    const CopySource source = layer_copy_source(layer);
    CHECK(source.runs.size() == 4);
    CHECK(source.compressed_bytes == 256 * K);
    CHECK(source.compressed_transfers == 5);

    const CopyFigures f = copy_figures(source, {});
    const std::uint64_t copied = 7 * M + 1728 * K + 64 * K;
    CHECK(f.bytes == copied);
    CHECK(f.runs == 4);
    CHECK(f.relaid_runs == 3);  // [0, 7M), [8M, 9M + 704K), [20M + 32K, 20M + 96K)
    REQUIRE(f.offload.size() == 4);
    // 1 MiB: 5 + 2 + 1 + 1 placed, 5 compressed; re-laid 7 + 2 + 1.
    CHECK(at(f, 1 * M).commands == 14);
    CHECK(at(f, 1 * M).compressed_commands == 5);
    CHECK(at(f, 1 * M).relaid_commands == 10);
    // 4 MiB: 2 + 1 + 1 + 1 + 5; re-laid 2 + 1 + 1.
    CHECK(at(f, 4 * M).commands == 10);
    CHECK(at(f, 4 * M).relaid_commands == 4);
    CHECK(at(f, 4 * M).average_bytes == Approx(static_cast<double>(copied) / 10));
    CHECK(at(f, 4 * M).relaid_average_bytes == Approx(static_cast<double>(copied) / 4));
    const OffloadPreset p = kAllFlashVsphere6;
    CHECK(at(f, 4 * M).seconds ==
          Approx(10 * p.command_seconds + static_cast<double>(copied) * p.byte_seconds));
    CHECK(at(f, 4 * M).relaid_seconds ==
          Approx(4 * p.command_seconds + static_cast<double>(copied) * p.byte_seconds));
    CHECK(at(f, 8 * M).commands == 9);
    CHECK(at(f, 8 * M).relaid_commands == 3);
    CHECK(at(f, 16 * M).commands == 9);
    CHECK(at(f, 16 * M).relaid_commands == 3);

    // VMFS5 thin: every command at most 1 MiB whatever the transfer size.
    CopyOptions vmfs5;
    vmfs5.vmfs5_thin = true;
    const CopyFigures capped = copy_figures(source, vmfs5);
    CHECK(at(capped, 16 * M).command_limit == 1 * M);
    CHECK(at(capped, 16 * M).commands == 14);
    CHECK(at(capped, 16 * M).relaid_commands == 10);

    // 8 and 16 MiB share the worst ratio, 9 commands against 3: the smaller size is named.
    const auto warnings = copy_warnings(f);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].code == "COPY_LAYOUT_SCATTERED");
    CHECK(warnings[0].message.find("at 8 MiB transfers a full copy issues 9 offload commands, 3.0x the 3") !=
          std::string::npos);
}

TEST_CASE("three copy states and the advice they lead to", "[analyzers][copy]") {
    // Now: 16 MiB in one run, 4 commands at 4 MiB.
    const Layer now = layer_of({{0, 0, 16 * M, 0}});
    const std::vector<Layer> image{now};

    // A plan writing 64 KiB new at 8 MiB that the container appends at the file's end:
    // 2 + 1 + 2 commands; 5 ≥ 1.1 · 4, re-laid 4.
    Layer scattered = layer_of(
        {{0, 0, 8 * M, 0}, {8 * M, 16 * M, 64 * K, 0}, {8 * M + 64 * K, 8 * M + 64 * K, 8 * M - 64 * K, 0}});
    const CopyStates grown = copy_states(image, scattered, {});
    CHECK(at(grown.now, 4 * M).commands == 4);
    CHECK(at(grown.after_plan, 4 * M).commands == 5);
    CHECK(at(grown.after_plan, 4 * M).relaid_commands == 4);
    REQUIRE(grown.advice.size() == 1);
    CHECK(grown.advice[0].code == "COPY_PLAN_SCATTERS");
    CHECK(grown.advice[0].message.find("at 4 MiB transfers from 4 to 5") != std::string::npos);
    CHECK(grown.advice[0].message.find("4 commands, 1.2x fewer") != std::string::npos);

    // Eight runs of 1 MiB in reverse order in the file, which the plan leaves alone: 8
    // commands now and after, 2 re-laid.
    std::vector<HostExtent> reversed;
    for (std::uint64_t i = 0; i < 8; ++i) reversed.push_back({i * M, (7 - i) * M, 1 * M, 0});
    const Layer template_layer = layer_of(reversed);
    const CopyStates kept = copy_states(std::vector<Layer>{template_layer}, template_layer, {});
    CHECK(at(kept.now, 4 * M).commands == 8);
    CHECK(at(kept.after_plan, 4 * M).commands == 8);
    REQUIRE(kept.advice.size() == 1);
    CHECK(kept.advice[0].code == "COPY_RELAY_AFTER_PLAN");
    CHECK(kept.advice[0].message.find("4.0x fewer offload commands at 4 MiB transfers (8 -> 2)") !=
          std::string::npos);

    // Contiguous before and after: nothing to advise.
    CHECK(copy_states(image, now, {}).advice.empty());
    // Below the 10 % threshold: 10 commands now, 11 after is advice; 11 now, 12 after is not.
    CopyFigures a, b;
    a.offload = {OffloadFigures{4 * M, 4 * M, 10}};
    b.offload = {OffloadFigures{4 * M, 4 * M, 11}};
    b.offload[0].relaid_commands = 10;
    CHECK(copy_advice(a, b).at(0).code == "COPY_PLAN_SCATTERS");
    a.offload[0].commands = 11;
    b.offload[0].commands = 12;
    CHECK(copy_advice(a, b).empty());
    // Without 4 MiB figures the first size asked is compared.
    CopyOptions sizes;
    sizes.transfer_sizes = {16 * M, 1 * M};
    const CopyStates at16 = copy_states(image, scattered, sizes);
    REQUIRE(reference_offload(at16.now) != nullptr);
    CHECK(reference_offload(at16.now)->transfer_size == 16 * M);
    REQUIRE(at16.advice.size() == 1);
    CHECK(at16.advice[0].message.find("at 16 MiB transfers from 1 to 3") != std::string::npos);
}

TEST_CASE("a host-side copy reads the runs in guest order, files one after another", "[analyzers][copy]") {
    const Layer layer = layer_of(
        {{0, 1 * M, 5 * M, 0}, {5 * M, 10 * M, 2 * M, 0}, {8 * M, 12 * M, 1 * M, 0}, {9 * M, 0, 512 * K, 1}});
    const CopyFigures f = copy_figures(layer_copy_source(layer), {});
    // File 0 ends at 13 MiB, so file 1 starts there. Reads of at most 2 MiB:
    // 1M+2M, 3M+2M, 5M+1M | 10M+2M | 12M+1M | 13M+512K; only 5M → 10M is not sequential.
    const IoStats& now = f.host_copy;
    CHECK(now.ios == 6);
    CHECK(now.bytes == 8 * M + 512 * K);
    CHECK(now.sequential == 4);
    CHECK(now.sequential_percent == Approx(80.0));
    const Histogram& seeks = now.seek_distance;
    CHECK(seeks.counts()[seeks.bucket_of(1)] == 4);
    CHECK(seeks.counts()[seeks.bucket_of(10 * M / 512 - (6 * M / 512 - 1))] == 1);  // 8193 sectors
    const Histogram& sizes = now.io_length;
    CHECK(sizes.counts()[sizes.bucket_of(512 * K)] == 1);
    CHECK(sizes.counts().back() == 5);  // 1 and 2 MiB: beyond vscsiStats' last limit
    // Re-laid: [0, 7M) in 2+2+2+1, then [8M, 9.5M) in one read, all back to back.
    const IoStats& relaid = f.host_copy_relaid;
    CHECK(relaid.ios == 5);
    CHECK(relaid.sequential == 4);
    CHECK(relaid.sequential_percent == Approx(100.0));
    CHECK(now.device_seconds.hdd > relaid.device_seconds.hdd);  // one seek more, same bytes
}

TEST_CASE("a full clone of a chain reads each byte from the topmost layer that holds it",
          "[analyzers][copy]") {
    Layer base = layer_of({{0, 0, 8 * M, 0}});
    Layer top = layer_of({{2 * M, 64 * K, 1 * M, 0}, {7 * M, 0, 64 * K, 1}});
    top.zero.add(bytes(5 * M, 6 * M));  // declared zero: nothing is copied, the base is hidden
    const std::vector<Layer> chain = {top, base};
    const CopySource source = chain_copy_source(chain);
    // The top layer takes files 0 and 1, so the base's only file is 2.
    const std::vector<HostExtent> expected = {
        {0, 0, 2 * M, 2},         {2 * M, 64 * K, 1 * M, 0},
        {3 * M, 3 * M, 2 * M, 2}, {6 * M, 6 * M, 1 * M, 2},
        {7 * M, 0, 64 * K, 1},    {7 * M + 64 * K, 7 * M + 64 * K, 1 * M - 64 * K, 2}};
    CHECK(source.runs == expected);
    CHECK(source.copied == std::vector{bytes(0, 5 * M), bytes(6 * M, 8 * M)});
    const CopyFigures f = copy_figures(source, {});
    CHECK(at(f, 4 * M).commands == 6);
    CHECK(at(f, 4 * M).relaid_commands == 3);  // ⌈5/4⌉ + ⌈2/4⌉
    CHECK(at(f, 1 * M).commands == 2 + 1 + 2 + 1 + 1 + 1);
}

TEST_CASE("the preset reproduces the published 65 GiB deploys it was fitted to", "[analyzers][copy]") {
    const OffloadPreset p = kAllFlashVsphere6;
    const double gib65 = 65.0 * 1024 * 1024 * 1024;
    CHECK(4200 * p.command_seconds + gib65 * p.byte_seconds == Approx(13.0));
    CHECK(44000 * p.command_seconds + gib65 * p.byte_seconds == Approx(46.0));
    // The third measurement (4,400 commands, 11 s) is not fitted: the model says 13.2 s.
    CHECK(4400 * p.command_seconds + gib65 * p.byte_seconds == Approx(13.17).epsilon(0.01));
    CHECK(p.command_seconds == Approx(0.829e-3).epsilon(0.001));
}

TEST_CASE("the worked 65 GiB example of docs/copy.md", "[analyzers][copy]") {
    // 44,000 runs of 1.5 MiB, one guest range, placed in the file in reverse order.
    constexpr std::uint64_t runs = 44000, run = 3 * M / 2;
    std::vector<HostExtent> extents;
    for (std::uint64_t i = 0; i < runs; ++i) extents.push_back({i * run, (runs - 1 - i) * run, run, 0});
    const Layer layer = layer_of(extents);
    CopyOptions o;
    o.transfer_sizes = {16 * M};
    const CopyFigures f = copy_figures(layer_copy_source(layer), o);
    CHECK(f.bytes == 66000 * M);
    CHECK(at(f, 16 * M).commands == 44000);
    CHECK(at(f, 16 * M).seconds == Approx(45.92).epsilon(0.001));
    CHECK(at(f, 16 * M).relaid_commands == 4125);
    CHECK(at(f, 16 * M).relaid_seconds == Approx(12.86).epsilon(0.001));
    REQUIRE(copy_warnings(f).size() == 1);
    CHECK(copy_warnings(f)[0].message.find("10.7x the 4125") != std::string::npos);

    o.vmfs5_thin = true;
    const CopyFigures thin = copy_figures(layer_copy_source(layer), o);
    CHECK(at(thin, 16 * M).commands == 88000);  // two per 1.5 MiB run
    CHECK(at(thin, 16 * M).relaid_commands == 66000);
    CHECK(at(thin, 16 * M).relaid_seconds == Approx(64.16).epsilon(0.001));
    CHECK(copy_warnings(thin).empty());
}

TEST_CASE("the three states of the worked 65 GiB example of docs/copy.md", "[analyzers][copy][impact]") {
    // The thin template of the worked example, and a plan (a defrag in the guest) that
    // writes 2,000 pieces of 1.5 MiB into the free space after its data, last first.
    constexpr std::uint64_t runs = 44000, run = 3 * M / 2, pieces = 2000;
    std::vector<HostExtent> extents;
    for (std::uint64_t i = 0; i < runs; ++i) extents.push_back({i * run, (runs - 1 - i) * run, run, 0});
    Layer layer = layer_of(extents);
    layer.format = ImageFormat::Vmdk;  // a sparse file: what is written new goes to its end
    VolumeMap volume;
    volume.partition = 1;
    volume.cluster_size = 4 * K;
    volume.total_clusters = static_cast<std::int64_t>((runs + pieces) * run / (4 * K));
    Plan plan;
    for (std::uint64_t k = pieces; k-- > 0;)
        plan.moves.push_back({64, "$DATA", 0, 0, static_cast<std::int64_t>((runs + k) * run / (4 * K)),
                              static_cast<std::int64_t>(run / (4 * K))});
    const LayerAfterPlan after = top_layer_after_plan(layer, volume, plan);
    CHECK(after.new_bytes == pieces * run);
    CopyOptions o;
    o.transfer_sizes = {16 * M};
    const CopyStates states = copy_states(std::vector<Layer>{layer}, after.layer, o);
    CHECK(at(states.now, 16 * M).commands == 44000);
    CHECK(at(states.now, 16 * M).seconds == Approx(45.92).epsilon(0.001));
    // Each piece lands at the file's end after the one written before it: a run of its own.
    CHECK(at(states.after_plan, 16 * M).commands == 46000);
    CHECK(at(states.after_plan, 16 * M).seconds == Approx(48.01).epsilon(0.001));
    // Re-laid: 69,000 MiB in one range.
    CHECK(at(states.after_plan, 16 * M).relaid_commands == 4313);
    CHECK(at(states.after_plan, 16 * M).relaid_seconds == Approx(13.44).epsilon(0.001));
    // 46,000 < 1.1 · 44,000: the plan does not scatter it much more; re-laying pays.
    REQUIRE(states.advice.size() == 1);
    CHECK(states.advice[0].code == "COPY_RELAY_AFTER_PLAN");
    CHECK(states.advice[0].message.find("10.7x fewer offload commands at 16 MiB transfers (46000 -> 4313)") !=
          std::string::npos);
}

TEST_CASE("copy options outside ESXi's range are refused", "[analyzers][copy]") {
    CopyOptions o;
    o.transfer_sizes = {32 * M};
    CHECK_THROWS_AS(check_copy_options(o), Error);
    o.transfer_sizes = {1000};
    CHECK_THROWS_AS(check_copy_options(o), Error);
    o.transfer_sizes = {};
    CHECK_THROWS_AS(check_copy_options(o), Error);
    o.transfer_sizes = {512 * K};
    CHECK_NOTHROW(check_copy_options(o));
    // Costs a user gives in place of the preset's must be finite and not negative.
    o.preset.command_seconds = -0.001;
    CHECK_THROWS_AS(check_copy_options(o), Error);
    o.preset.command_seconds = 0;
    o.preset.byte_seconds = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(check_copy_options(o), Error);
    CHECK(find_offload_preset("all-flash-vsphere6") == &kOffloadPresets[0]);
    CHECK(find_offload_preset("none") == nullptr);
}

TEST_CASE("offload commands of qcow2, VMDK and VHD written out of order equal qemu-img map's count",
          "[analyzers][copy][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const test::WorkDir dir("copy-shuffled");
    for (const std::string format : {"qcow2", "vmdk", "vpc"}) {
        INFO(format);
        const fs::path image = dir / ("disk." + format);
        test::run_ok({"qemu-img", "create", "-q", "-f", format, image.string(), "64M"});
        test::qemu_io(image, format, shuffled_writes());
        const auto map = test::qemu_map(image, format);
        const auto disk = open_image(image.string());
        const ImageCopyCost cost = analyze_copy_cost(*disk);
        for (const std::uint64_t t : {1 * M, 4 * M, 8 * M, 16 * M}) {
            INFO("transfer " << t);
            CHECK(at(cost.chain, t).commands == qemu_commands(map, t, one_file));
            CHECK(at(cost.chain, t).compressed_commands == 0);
        }
        // Out of order: the whole-disk copy needs more commands than the data re-laid.
        CHECK(at(cost.chain, 16 * M).commands > at(cost.chain, 16 * M).relaid_commands);
        CHECK(cost.physical.at(0).empty());  // a container file: no raw level

        if (format == "vpc") continue;  // a converted VHD keeps a sector bitmap before each block
        // qemu-img convert writes the same data in disk order: its count is our re-laid one.
        const fs::path copy = dir / ("copy." + format);
        test::run_ok({"qemu-img", "convert", "-f", format, "-O", format, image.string(), copy.string()});
        const auto copy_map = test::qemu_map(copy, format);
        const ImageCopyCost relaid = analyze_copy_cost(*open_image(copy.string()));
        for (const std::uint64_t t : {1 * M, 4 * M, 8 * M, 16 * M}) {
            INFO("transfer " << t);
            CHECK(qemu_commands(copy_map, t, one_file) == at(cost.chain, t).relaid_commands);
            CHECK(at(relaid.chain, t).commands == at(cost.chain, t).relaid_commands);
            CHECK(at(relaid.chain, t).relaid_commands == at(relaid.chain, t).commands);
        }
        CHECK(relaid.warnings.empty());
    }
}

TEST_CASE("a qcow2 chain is counted as a full clone reads it, each range from its layer's file",
          "[analyzers][copy][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const test::WorkDir dir("copy-chain");
    const fs::path base = dir / "base.qcow2", top = dir / "top.qcow2";
    test::run_ok({"qemu-img", "create", "-q", "-f", "qcow2", base.string(), "64M"});
    test::qemu_io(base, "qcow2", shuffled_writes());
    test::run_ok(
        {"qemu-img", "create", "-q", "-f", "qcow2", "-b", base.string(), "-F", "qcow2", top.string()});
    // The top layer hides part of the base with data and part with declared zeros.
    test::qemu_io(top, "qcow2", {"write -P 9 40M 3M", "write -P 8 1M 1M", "write -z 20M 2M"});
    const auto map = test::qemu_map(top, "qcow2");
    REQUIRE(std::ranges::any_of(map, [](const test::QemuExtent& e) { return e.depth == 1 && e.data; }));
    const auto disk = open_image(top.string());
    REQUIRE(disk->layers().size() == 2);
    const ImageCopyCost cost = analyze_copy_cost(*disk);
    for (const std::uint64_t t : {1 * M, 4 * M, 16 * M}) {
        INFO("transfer " << t);
        CHECK(at(cost.chain, t).commands == qemu_commands(map, t, one_file, true));
        CHECK(at(cost.chain, t).relaid_commands == qemu_relaid_commands(map, t));
    }
    // Each layer on its own: the top holds 4 MiB in two runs; the base all its writes.
    CHECK(cost.layers[0].bytes == 4 * M);
    CHECK(cost.layers[1].bytes == 48 * 512 * K);
    CHECK(cost.chain.bytes < cost.layers[0].bytes + cost.layers[1].bytes);
}

TEST_CASE("VHDX blocks the BAT lists in reverse are one command each, two re-laid",
          "[analyzers][copy][vhdx]") {
    // qemu-img map gives no VHDX offsets: the writer's own block placement is the oracle.
    const test::WorkDir dir("copy-vhdx");
    const fs::path image = dir / "reversed.vhdx";
    test::VhdxSpec spec;
    spec.virtual_size = 16 * M;
    test::VhdxWriter writer(spec);
    const std::vector<std::byte> data(2 * M, std::byte{0x5a});
    for (std::uint64_t block = 0; block < 3; ++block) writer.write(block * 2 * M, data);
    const test::VhdxLayout layout = writer.save(image);
    REQUIRE(layout.block_offsets.size() == 3);
    // Swap the BAT entries of blocks 0 and 2 (the BAT carries no checksum).
    const auto entry_at = [&](std::uint64_t block) {
        return static_cast<std::streamoff>(layout.bat_offset + 8 * writer.payload_index(block));
    };
    {
        std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
        char first[8], last[8];
        f.seekg(entry_at(0)).read(first, 8);
        f.seekg(entry_at(2)).read(last, 8);
        f.seekp(entry_at(0)).write(last, 8);
        f.seekp(entry_at(2)).write(first, 8);
        REQUIRE(f.good());
    }
    const ImageCopyCost cost = analyze_copy_cost(*open_image(image.string()));
    CHECK(cost.chain.bytes == 6 * M);
    // Block 1 stays between 0 and 2 in the file, so no two neighbours continue each other.
    CHECK(cost.chain.runs == 3);
    CHECK(at(cost.chain, 4 * M).commands == 3);
    CHECK(at(cost.chain, 4 * M).relaid_commands == 2);
    CHECK(at(cost.chain, 1 * M).commands == 6);
    CHECK(at(cost.chain, 1 * M).relaid_commands == 6);
    CHECK(at(cost.chain, 16 * M).relaid_commands == 1);
    // 2 MiB reads: block 0 at the file's last block, block 1 behind it, block 2 behind that.
    CHECK(cost.chain.host_copy.ios == 3);
    CHECK(cost.chain.host_copy.sequential == 0);
    CHECK(cost.chain.host_copy_relaid.sequential == 2);
    CHECK(cost.warnings.size() == 1);  // 3 against 1 at 16 MiB
}

namespace {

/// A 5 GiB VMDK NAME.vmdk of `subformat` (2 GiB extent files) with three writes, the second straddling
/// the first two files; its copy figures, whose commands must equal qemu-img map's count at
/// every transfer size. `runs_by_qemu` is that count with no size limit.
ImageCopyCost split_vmdk_cost(const test::WorkDir& dir, const std::string& name, const std::string& subformat,
                              std::uint64_t& runs_by_qemu) {
    const fs::path image = dir / (name + ".vmdk");
    test::run_ok({"qemu-img", "create", "-q", "-f", "vmdk", "-o", "subformat=" + subformat, image.string(), "5G"});
    test::qemu_io(image, "vmdk", {"write -P 1 3G 1M", "write -P 2 2047M 2M", "write -P 3 0 1M"});
    const auto map = test::qemu_map(image, "vmdk");
    const auto file_of = [](std::uint64_t offset) { return offset / (2048 * M); };
    const auto disk = open_image(image.string());
    ImageCopyCost cost = analyze_copy_cost(*disk);
    for (const std::uint64_t t : {1 * M, 4 * M, 16 * M}) {
        INFO(subformat << ", transfer " << t);
        CHECK(at(cost.chain, t).commands == qemu_commands(map, t, file_of));
    }
    runs_by_qemu = qemu_commands(map, std::uint64_t{1} << 62, file_of);
    return cost;
}

}  // namespace

TEST_CASE("a twoGbMaxExtentSparse VMDK is counted across its extent files", "[analyzers][copy][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const test::WorkDir dir("copy-split");
    std::uint64_t runs_by_qemu = 0;
    const ImageCopyCost cost = split_vmdk_cost(dir, "split", "twoGbMaxExtentSparse", runs_by_qemu);
    // 0, 2047M, 2048M (the next file), 3G: four runs; re-laid, the straddling write is one.
    CHECK(cost.chain.runs == 4);
    CHECK(cost.chain.relaid_runs == 3);
    CHECK(at(cost.chain, 16 * M).commands == 4);
    CHECK(at(cost.chain, 16 * M).relaid_commands == 3);
}

TEST_CASE("after a plan, a twoGbMaxExtentSparse VMDK's new grains are counted where qemu puts them",
          "[analyzers][copy][impact][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const test::WorkDir dir("copy-split-plan");
    std::uint64_t runs_by_qemu = 0;
    (void)split_vmdk_cost(dir, "split", "twoGbMaxExtentSparse", runs_by_qemu);
    const fs::path image = dir / "split.vmdk";
    const auto disk = open_image(image.string());
    const Layer& top = disk->layers().front();
    const std::vector<LayerFileSpan> spans = {
        {0, std::nullopt}, {2048 * M, std::nullopt}, {4096 * M, std::nullopt}};
    CHECK(top.file_spans == spans);

    // A volume of 64 KiB clusters over the whole disk, and writes into each extent file:
    // the second file twice (the later write continues the earlier one), the empty third
    // file, the first file.
    VolumeMap volume;
    volume.partition = 1;
    volume.cluster_size = 64 * K;
    volume.total_clusters = static_cast<std::int64_t>(5 * 1024 * M / (64 * K));
    const auto lcn = [](std::uint64_t offset) { return static_cast<std::int64_t>(offset / (64 * K)); };
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> writes = {{3072 * M + 1 * M, 1 * M},
                                                                         {4096 * M + 640 * K, 128 * K},
                                                                         {10 * M, 256 * K},
                                                                         {3072 * M + 2 * M, 64 * K}};
    Plan plan;
    std::vector<std::string> qemu_writes;
    for (const auto& [offset, length] : writes) {
        plan.moves.push_back({64, "$DATA", 0, 0, lcn(offset), lcn(length)});
        qemu_writes.push_back("write -P 9 " + std::to_string(offset) + " " + std::to_string(length));
    }
    const LayerAfterPlan after = top_layer_after_plan(top, volume, plan);
    CHECK(after.new_bytes == 1 * M + 128 * K + 256 * K + 64 * K);
    const CopyStates states = copy_states(disk->layers(), after.layer, {});

    // qemu carries the writes out on a copy of the disk: its map, and our reader, count the
    // commands the after-plan state predicts.
    const test::WorkDir applied_dir("copy-split-applied");
    for (const auto& entry : fs::directory_iterator(dir.path()))
        if (entry.path().filename().string().starts_with("split"))
            fs::copy_file(entry.path(), applied_dir / entry.path().filename().string());
    const fs::path applied = applied_dir / "split.vmdk";
    test::qemu_io(applied, "vmdk", qemu_writes);
    const auto map = test::qemu_map(applied, "vmdk");
    const auto file_of = [](std::uint64_t offset) { return offset / (2048 * M); };
    const ImageCopyCost applied_cost = analyze_copy_cost(*open_image(applied.string()));
    for (const std::uint64_t t : {1 * M, 4 * M, 16 * M}) {
        INFO("transfer " << t);
        CHECK(at(states.after_plan, t).commands == qemu_commands(map, t, file_of));
        CHECK(at(states.after_plan, t).commands == at(applied_cost.chain, t).commands);
        CHECK(at(states.after_plan, t).relaid_commands == at(applied_cost.chain, t).relaid_commands);
    }
    // 4 runs now; after: 3 more (the second file's two writes are one run), 7 commands at
    // 16 MiB, 5 re-laid.
    CHECK(at(states.now, 16 * M).commands == 4);
    CHECK(at(states.after_plan, 16 * M).commands == 7);
    CHECK(at(states.after_plan, 16 * M).relaid_commands == 5);
    REQUIRE(states.advice.size() == 1);
    CHECK(states.advice[0].code == "COPY_PLAN_SCATTERS");
}

TEST_CASE("a twoGbMaxExtentFlat VMDK: runs across its flat files, each file's physical extents",
          "[analyzers][copy][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const test::WorkDir dir("copy-flat");
    std::uint64_t runs_by_qemu = 0;
    const ImageCopyCost cost = split_vmdk_cost(dir, "flat", "twoGbMaxExtentFlat", runs_by_qemu);
    // A flat file holds the disk in place, so the runs are qemu's (one command each at the
    // largest size; qemu also stores the first block of each file it creates). The write
    // straddling the first two files is two runs, one range re-laid.
    CHECK(cost.chain.runs == runs_by_qemu);
    CHECK(cost.chain.relaid_runs == cost.chain.runs - 1);
    // Three flat files, each with its own physical extents on the scratch file system.
    REQUIRE(cost.physical.at(0).size() == 3);
    std::uint64_t mapped = 0;
    for (std::uint32_t i = 0; i < 3; ++i) {
        const PhysicalFigures& p = cost.physical[0][i];
        INFO(p.file.note);
        CHECK(p.file.file == i);
        REQUIRE(p.file.known());
        CHECK(p.extents >= 1);
        CHECK(p.file.path.find("flat-f00" + std::to_string(i + 1) + ".vmdk") != std::string::npos);
        mapped += p.mapped_bytes;
    }
    CHECK(mapped >= 4 * M);  // at least the data written; the file system may map more
}

TEST_CASE("streamOptimized grains and compressed qcow2 clusters are transfers of their own",
          "[analyzers][copy][qemu]") {
    test::require_tools({"qemu-img", "qemu-io"});
    const test::WorkDir dir("copy-compressed");
    const fs::path raw = dir / "data.raw";
    test::run_ok({"qemu-img", "create", "-q", "-f", "raw", raw.string(), "16M"});
    test::qemu_io(raw, "raw", {"write -P 7 0 1M", "write -P 9 4M 256K"});
    struct Case {
        std::string name, format;
        std::vector<std::string> options;
        std::uint64_t granule;
    };
    // With extended L2 entries the granule is a 2 KiB subcluster, but a compressed cluster
    // is still stored whole: one transfer per 64 KiB cluster.
    for (const Case& c : {Case{"qcow2", "qcow2", {"-c"}, 64 * K},
                          Case{"qcow2-ext", "qcow2", {"-c", "-o", "extended_l2=on"}, 2 * K},
                          Case{"vmdk", "vmdk", {"-o", "subformat=streamOptimized"}, 64 * K}}) {
        INFO(c.name);
        const fs::path image = dir / ("packed-" + c.name);
        std::vector<std::string> argv{"qemu-img", "convert", "-f", "raw", "-O", c.format};
        argv.insert(argv.end(), c.options.begin(), c.options.end());
        argv.insert(argv.end(), {raw.string(), image.string()});
        test::run_ok(argv);
        const auto disk = open_image(image.string());
        const Layer& layer = disk->layers().front();
        REQUIRE(layer.granule_size == c.granule);
        const ImageCopyCost cost = analyze_copy_cost(*disk);
        // 1 MiB + 256 KiB of data: 20 clusters/grains, each compressed on its own.
        CHECK(cost.chain.compressed_bytes == 1280 * K);
        CHECK(cost.chain.compressed_transfers == 20);
        CHECK(cost.chain.runs == 0);
        CHECK(at(cost.chain, 4 * M).commands == 20);
        CHECK(at(cost.chain, 4 * M).compressed_commands == 20);
        CHECK(at(cost.chain, 4 * M).relaid_commands == 2);
        CHECK(cost.chain.host_copy.ios == 0);  // no place in the file to read from
    }
}

TEST_CASE("FIEMAP extents of a raw file fragmented on purpose equal filefrag -v", "[image][copy][host]") {
    test::require_tools({"filefrag"});
    const test::WorkDir dir("copy-fiemap");
    const fs::path a = dir / "a.raw", b = dir / "b.raw";
    {
        // Two files grown in turns, each piece written through to the device: the
        // allocator interleaves them.
        const UniqueFd fa(::open(a.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
        const UniqueFd fb(::open(b.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
        REQUIRE((fa.get() >= 0 && fb.get() >= 0));
        const std::string piece(64 * K, 'x');
        for (int i = 0; i < 16; ++i)
            for (const int fd : {fa.get(), fb.get()}) {
                REQUIRE(::write(fd, piece.data(), piece.size()) == static_cast<ssize_t>(piece.size()));
                REQUIRE(::fsync(fd) == 0);
            }
    }
    const auto source = FileSource::open(a.string());
    const PhysicalFile got = source->physical_layout();
    INFO(got.note);
    REQUIRE(got.known());  // the scratch directory must lie on ext4, XFS or btrfs
    CHECK(got.unplaced_extents == 0);

    const auto r = test::run({"filefrag", "-v", a.string()});
    REQUIRE(r.status == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, std::regex("blocks of (\\d+) bytes")));
    const std::uint64_t block = std::stoull(m[1]);
    // "   0:        0..      15:    1234..    1249:     16:             flags"
    const std::regex row("^\\s*\\d+:\\s*(\\d+)\\.\\.\\s*(\\d+):\\s*(\\d+)\\.\\.\\s*(\\d+):\\s*(\\d+):");
    std::vector<PhysicalExtent> expected;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
        if (std::regex_search(line, m, row))
            expected.push_back(
                {std::stoull(m[1]) * block, std::stoull(m[3]) * block, std::stoull(m[5]) * block});
    REQUIRE(!expected.empty());
    CHECK(got.extents == expected);

    const PhysicalFigures figures = physical_figures(got);
    CHECK(figures.mapped_bytes == 1 * M);
    CHECK(figures.extents >= 2);  // interleaved with b.raw

    // Through the image: layer 0 of a raw image has the file as its one physical file.
    const auto disk = open_image(a.string());
    const ImageCopyCost cost = analyze_copy_cost(*disk);
    REQUIRE(cost.physical.at(0).size() == 1);
    CHECK(cost.physical[0][0].extents == figures.extents);
    CHECK(cost.physical[0][0].mapped_bytes == 1 * M);
}

TEST_CASE("where the host cannot tell, the physical level is a note", "[image][copy][host]") {
    // tmpfs keeps pages, not device extents: FIEMAP is not supported there.
    struct statfs fs_info {};
    REQUIRE(::statfs("/dev/shm", &fs_info) == 0);
    REQUIRE(fs_info.f_type == 0x01021994);  // TMPFS_MAGIC: the test needs a tmpfs
    const fs::path file = fs::path("/dev/shm") / ("guestfrag-copy-" + std::to_string(::getpid()) + ".raw");
    {
        std::ofstream f(file, std::ios::binary);
        const std::string data(128 * K, 'y');
        f.write(data.data(), static_cast<std::streamsize>(data.size()));
    }
    const PhysicalFile got = FileSource::open(file.string())->physical_layout();
    fs::remove(file);
    CHECK_FALSE(got.known());
    CHECK(got.note.find("cannot report physical extents") != std::string::npos);
    CHECK(got.extents.empty());

    const MemorySource memory("in-memory", std::make_shared<const std::vector<std::byte>>(512));
    CHECK(memory.physical_layout().note == "not a host file");
}

TEST_CASE("analyze reports the copy figures and warns when the layout scatters a clone",
          "[cli][copy][qemu]") {
    test::require_tools({"qemu-img"});
    MkImageOptions o;
    o.disk_size = 64ull << 20;
    o.files = 300;
    o.seed = 29;
    const fs::path raw = test::generated_image("copy-cli", o);
    const test::WorkDir dir("copy-cli");
    const fs::path image = dir / "disk.qcow2";
    // Out-of-order writes from 8 coroutines scatter 4 KiB clusters in the file.
    test::run_ok({"qemu-img", "convert", "-W", "-m", "8", "-f", "raw", "-O", "qcow2", "-o",
                  "cluster_size=4096", raw.string(), image.string()});
    const auto map = test::qemu_map(image, "qcow2");

    const auto r = test::run_cli({"analyze", image.string(), "--json", "--transfer-size", "2M,16M"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const Json copy = Json::parse(r.out)["image"]["copy"];
    const Json& offload = copy["chain"]["offload"];
    REQUIRE(offload.size() == 2);
    CHECK(offload[0]["transfer_size"] == 2 * M);
    CHECK(offload[0]["now"]["commands"] == qemu_commands(map, 2 * M, one_file));
    CHECK(offload[1]["now"]["commands"] == qemu_commands(map, 16 * M, one_file));
    CHECK(copy["layers"][0]["offload"] == offload);
    const std::uint64_t now = offload[1]["now"]["commands"], relaid = offload[1]["relaid"]["commands"];
    CHECK(copy["warnings"].size() == (now >= 2 * relaid ? 1u : 0u));
    REQUIRE(now >= 2 * relaid);  // the shuffled file must make the warning worth checking
    CHECK(copy["warnings"][0]["code"] == "COPY_LAYOUT_SCATTERED");
    CHECK(copy["chain"]["host_copy"]["now"]["histograms"]["ioLength"]["counts"].size() ==
          io_length_limits().size() + 1);

    // The raw original: already laid out in disk order, no warning; its physical level is
    // reported from the host file system.
    const auto plain = test::run_cli({"analyze", raw.string(), "--json", "--vmfs5-thin"});
    REQUIRE(plain.status == 0);
    const Json raw_copy = Json::parse(plain.out)["image"]["copy"];
    CHECK(raw_copy["warnings"].empty());
    for (const Json& f : raw_copy["chain"]["offload"]) {
        CHECK(f["command_limit"] == 1 * M);
        CHECK(f["now"]["commands"] == f["relaid"]["commands"]);
    }
    CHECK(raw_copy["layers"][0]["physical_files"].size() == 1);

    const auto text = test::run_cli({"analyze", image.string()});
    REQUIRE(text.status == 0);
    CHECK(text.out.find("COPY_LAYOUT_SCATTERED") != std::string::npos);
    CHECK(text.out.find("Host-side copy now") != std::string::npos);

    const auto bad = test::run_cli({"analyze", image.string(), "--transfer-size", "32M"});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("transfer size") != std::string::npos);
}
