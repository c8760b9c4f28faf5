// SPDX-License-Identifier: GPL-2.0-or-later
// First writes on thin, lazy-zeroed and eager-zeroed storage (docs/estimate.md §8): the
// written map's zeroing rule, the three results side by side and the calibrated preset.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "core/estimate/device_model.hpp"
#include "core/estimate/estimate.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/estimate/written_map.hpp"
#include "support/hand_volume.hpp"
#include "support/provisioned.hpp"

using namespace guestfrag;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

/// A write of `length` bytes at byte `offset` of the disk.
Io write_at(std::uint64_t offset, std::uint64_t length) {
    return Io{static_cast<std::int64_t>(offset / kSectorBytes), length, true};
}

/// 4 KiB clusters at byte 1 MiB, 1000 clusters, free [100, 1000), one file in [0, 100).
VolumeMap volume_with_free_space() {
    VolumeMap v = test::empty_volume(1000);
    v.partition_offset = MiB;
    v.free.add(test::r(100, 1000));
    v.streams = {test::stream(30, {{0, 0, 100}})};
    return v;
}

}  // namespace

TEST_CASE("written map: short and long writes, over a layer's runs, agree with a set of blocks",
          "[estimate][provisioning]") {
    // Random writes of 1 to 300 blocks of 4 KiB (short ones kept as words, long ones as
    // runs) and reads, on a layer that stores a few runs; the oracle is every block kept
    // in a std::set and every byte counted by hand.
    constexpr std::uint64_t kBlock = 4 * KiB;
    Layer layer;
    layer.allocated.add(ByteSet::interval_type::right_open(0, 10 * kBlock));
    layer.allocated.add(ByteSet::interval_type::right_open(100 * kBlock + 512, 130 * kBlock));
    layer.allocated.add(ByteSet::interval_type::right_open(2000 * kBlock, 2300 * kBlock));
    WrittenMap map = WrittenMap::from_layer(layer, kBlock);
    std::set<std::uint64_t> blocks;
    for (std::uint64_t b = 0; b < 10; ++b) blocks.insert(b);
    for (std::uint64_t b = 100; b < 130; ++b) blocks.insert(b);
    for (std::uint64_t b = 2000; b < 2300; ++b) blocks.insert(b);
    std::mt19937_64 random(11);
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t sectors = 1 + random() % (random() % 8 == 0 ? 2400 : 40);
        const std::uint64_t at = random() % (4000 * kBlock / 512);
        const Io io{static_cast<std::int64_t>(at), sectors * 512, random() % 4 != 0};
        const std::uint64_t start = at * 512;
        const std::uint64_t end = start + io.length;
        std::uint64_t in_written = 0;
        std::uint64_t fresh = 0;
        for (std::uint64_t b = start / kBlock; b <= (end - 1) / kBlock; ++b) {
            const std::uint64_t lo = std::max(start, b * kBlock);
            const std::uint64_t hi = std::min(end, (b + 1) * kBlock);
            if (blocks.contains(b)) in_written += hi - lo;
            else if (io.write) ++fresh;
        }
        INFO("IO " << i << ": sector " << at << ", " << sectors << " sectors");
        REQUIRE(map.bytes_in_written(io) == in_written);
        REQUIRE(map.replay(io) == fresh);
        if (io.write)
            for (std::uint64_t b = start / kBlock; b <= (end - 1) / kBlock; ++b) blocks.insert(b);
        REQUIRE(map.written_blocks() == blocks.size());
    }
    for (std::uint64_t b = 0; b < 4100; ++b) REQUIRE(map.written(b) == blocks.contains(b));
}

TEST_CASE("written map: a write pays for each never-written block it touches, once", "[estimate][provisioning]") {
    WrittenMap map(MiB);
    // Block boundaries: [0, 4 KiB) is block 0 only; [1 MiB, 2 MiB) is block 1 only.
    CHECK(map.replay(write_at(0, 4 * KiB)) == 1);
    CHECK(map.replay(write_at(MiB, MiB)) == 1);
    CHECK(map.written(0));
    CHECK(map.written(1));
    CHECK_FALSE(map.written(2));
    // The last sector of block 2 and the first of block 3: one IO spanning two blocks.
    CHECK(map.replay(write_at(3 * MiB - 512, 1024)) == 2);
    // Spanning block 3 (written) and 4 (not): only block 4 is a first write.
    CHECK(map.replay(write_at(4 * MiB - 4 * KiB, 8 * KiB)) == 1);
    CHECK(map.written_blocks() == 5);
    // A read never writes.
    CHECK(map.replay(Io{static_cast<std::int64_t>(10 * MiB / 512), 4096, false}) == 0);
    CHECK_FALSE(map.written(10));
    // A second pass over the same writes pays nothing.
    for (const Io& io : {write_at(0, 4 * KiB), write_at(MiB, MiB), write_at(3 * MiB - 512, 1024),
                         write_at(4 * MiB - 4 * KiB, 8 * KiB)})
        CHECK(map.replay(io) == 0);
    CHECK(map.written_blocks() == 5);
}

TEST_CASE("written map: a layer's stored bytes mark whole blocks written", "[estimate][provisioning]") {
    Layer layer;
    layer.allocated.add(ByteSet::interval_type::right_open(0, 4096));
    // One byte into block 3 and the first byte of block 5 mark those blocks whole.
    layer.allocated.add(ByteSet::interval_type::right_open(3 * 64 * KiB + 1, 3 * 64 * KiB + 2));
    layer.allocated.add(ByteSet::interval_type::right_open(5 * 64 * KiB, 5 * 64 * KiB + 1));
    // Declared zero stores nothing: not written.
    layer.zero.add(ByteSet::interval_type::right_open(8 * 64 * KiB, 9 * 64 * KiB));
    const WrittenMap map = WrittenMap::from_layer(layer, 64 * KiB);
    CHECK(map.written_blocks() == 3);
    CHECK(map.written(0));
    CHECK(map.written(3));
    CHECK(map.written(5));
    CHECK_FALSE(map.written(4));
    CHECK_FALSE(map.written(8));
}

TEST_CASE("first writes: eager never pays, lazy zeroes, thin also allocates", "[estimate][provisioning]") {
    // Two 1 MiB writes into never-written 1 MiB blocks, then one into a written one.
    const std::vector<Io> ios = {write_at(0, MiB), write_at(MiB, MiB), write_at(0, 4 * KiB)};
    WrittenMap map(MiB);
    const DeviceModels models;
    const IoStats s = summarize_ios(ios, models, &map);
    CHECK(map.written_blocks() == 0);  // the caller's map is left as it was
    CHECK(s.writes == 3);
    CHECK(s.written_bytes == 2 * MiB + 4 * KiB);
    CHECK(s.zero_block == MiB);
    CHECK(s.first_writes == 2);
    const ProvisionedSeconds& eager = test::provisioned(s, Provisioning::Eager);
    const ProvisionedSeconds& lazy = test::provisioned(s, Provisioning::Lazy);
    const ProvisionedSeconds& thin = test::provisioned(s, Provisioning::Thin);
    CHECK(eager.first_writes == 0);
    CHECK(lazy.first_writes == 2);
    CHECK(thin.first_writes == 2);
    // Eager is the IO time alone: SSD writes 3 · 40 µs + (2 MiB + 4 KiB) / 450 MB/s.
    const double ssd_io = 3 * 40e-6 + static_cast<double>(2 * MiB + 4 * KiB) / 450e6;
    CHECK(eager.device_seconds.ssd == Approx(ssd_io));
    CHECK(s.device_seconds.ssd == Approx(ssd_io));
    // Lazy: + 2 blocks zeroed at 450 MB/s; thin: + 2 allocations of 0.1 ms on top.
    CHECK(lazy.device_seconds.ssd == Approx(ssd_io + 2 * static_cast<double>(MiB) / 450e6));
    CHECK(thin.device_seconds.ssd == Approx(ssd_io + 2 * static_cast<double>(MiB) / 450e6 + 2 * 0.1e-3));
    // HDD: zeroing at 150 MB/s, allocation 12.9 ms; array: the calibrated 330.4 MB/s and 2.856 ms.
    CHECK(thin.device_seconds.hdd - eager.device_seconds.hdd ==
          Approx(2 * (static_cast<double>(MiB) / 150e6 + 12.9e-3)));
    CHECK(lazy.device_seconds.array - eager.device_seconds.array ==
          Approx(2 * static_cast<double>(MiB) / 330.4e6));

    // Without a map no write is a first write, and the three agree.
    const IoStats none = summarize_ios(ios, models);
    CHECK(none.first_writes == 0);
    CHECK(test::provisioned(none, Provisioning::Thin).device_seconds.hdd == Approx(none.device_seconds.hdd));
}

TEST_CASE("first writes: thin >= lazy >= eager for scan and write workloads", "[estimate][provisioning]") {
    const VolumeMap v = volume_with_free_space();
    PreparedWorkload scan;
    PreparedWorkload write;
    write.workload = parse_workload("write:3");
    write.write_sizes = {8192, MiB, 40960};
    const WrittenMap nothing(64 * KiB);
    for (const PreparedWorkload* w : {&scan, &write}) {
        const IoStats s = estimate_workload(v, *w, {}, &nothing).stats;
        test::check_thin_lazy_eager(s);
        const DeviceSeconds& e = test::provisioned(s, Provisioning::Eager).device_seconds;
        const DeviceSeconds& l = test::provisioned(s, Provisioning::Lazy).device_seconds;
        const DeviceSeconds& t = test::provisioned(s, Provisioning::Thin).device_seconds;
        if (w == &scan) {
            CHECK(s.writes == 0);
            CHECK(s.first_writes == 0);
            CHECK(t.hdd == e.hdd);
        } else {
            CHECK(s.writes == s.ios);
            // Hand-computed: cluster c lies at byte 1 MiB + 4096·c, blocks of 64 KiB. The
            // files land at clusters 100–101 (bytes 1,458,176–1,466,367: block 22),
            // 102–357 (to byte 2,514,943: blocks 22–38, 16 new) and 358–367 (to byte
            // 2,555,903, the last of block 38: none new).
            CHECK(s.first_writes == 17);
            CHECK(t.ssd > l.ssd);
            CHECK(l.ssd > e.ssd);
        }
    }
}

TEST_CASE("first writes: the 3par-format preset reproduces the published format times",
          "[estimate][provisioning]") {
    // A full format of a new 40 GiB disk: every byte written once, front to back, in 1 MiB
    // IOs; nothing written before; VMFS's 1 MiB file blocks.
    constexpr std::uint64_t kDisk = 40ull << 30;
    std::vector<Io> ios;
    for (std::uint64_t offset = 0; offset < kDisk; offset += MiB) ios.push_back(write_at(offset, MiB));
    const WrittenMap fresh(MiB);
    const std::optional<DeviceModels> models = device_preset("3par-format");
    REQUIRE(models);
    const IoStats s = summarize_ios(ios, *models, &fresh);
    CHECK(s.first_writes == 40960);
    CHECK(test::provisioned(s, Provisioning::Eager).device_seconds.array == Approx(537).epsilon(0.05));
    CHECK(test::provisioned(s, Provisioning::Lazy).device_seconds.array == Approx(667).epsilon(0.05));
    CHECK(test::provisioned(s, Provisioning::Thin).device_seconds.array == Approx(784).epsilon(0.05));
    // The default array's writes are faster, its first-write costs the same.
    const IoStats d = summarize_ios(ios, DeviceModels{}, &fresh);
    CHECK(test::provisioned(d, Provisioning::Lazy).device_seconds.array -
              test::provisioned(d, Provisioning::Eager).device_seconds.array ==
          Approx(130).epsilon(0.05));
    CHECK_FALSE(device_preset("fast"));
}

TEST_CASE("first writes: throughput figures", "[estimate][provisioning]") {
    const Throughput t = throughput(100, 50'000'000, 2.0);
    CHECK(t.iops == Approx(50));
    CHECK(t.mb_per_second == Approx(25));
    CHECK(t.mean_latency_seconds == Approx(0.02));
    const Throughput none = throughput(0, 0, 0);
    CHECK(none.iops == 0);
    CHECK(none.mean_latency_seconds == 0);
}
