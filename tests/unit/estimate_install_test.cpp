// SPDX-License-Identifier: GPL-2.0-or-later
// The install:N workload (docs/estimate.md §2): files appended chunk by chunk by several
// writers at once through NTFS-style per-write allocation, on hand-built volumes. Every
// figure is worked out by hand.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/estimate.hpp"
#include "core/estimate/install_workload.hpp"
#include "core/estimate/io_stats.hpp"
#include "core/estimate/workload.hpp"
#include "core/estimate/written_map.hpp"
#include "support/hand_volume.hpp"
#include "support/provisioned.hpp"

using namespace guestfrag;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

/// 4 KiB clusters, the volume at byte 1 MiB: cluster c is sector 2048 + 8c. 1000 clusters,
/// no MFT zone (a new file's first chunk looks from cluster 0), free `free`.
VolumeMap volume_with(const ClusterSet& free) {
    VolumeMap v = test::empty_volume(1000);
    v.partition_offset = MiB;
    v.free = free;
    return v;
}

ClusterSet one_run() {
    ClusterSet s;
    s.add(test::r(100, 600));
    return s;
}

/// Five free extents of 3 clusters: [100,103), [110,113), [120,123), [130,133), [140,143).
ClusterSet scattered() {
    ClusterSet s;
    for (std::int64_t lo = 100; lo < 150; lo += 10) s.add(test::r(lo, lo + 3));
    return s;
}

constexpr std::int64_t sector_of(std::int64_t cluster) { return 2048 + 8 * cluster; }

InstallJob job(unsigned writers, std::uint64_t chunk) {
    InstallJob j;
    j.writers = writers;
    j.chunk = chunk;
    return j;
}

std::string refusal(const std::string& workload) {
    try {
        (void)parse_workload(workload);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Unsupported);
        return e.what();
    }
    FAIL("accepted: " << workload);
    return {};
}

}  // namespace

TEST_CASE("install: options, defaults and spelling", "[estimate][install]") {
    const Workload d = parse_workload("install:10");
    CHECK(d.kind == Workload::Kind::Install);
    CHECK(d.files == 10);
    CHECK(d.install.writers == 4);
    CHECK(d.install.chunk == 64 * KiB);
    CHECK(d.text() == "install:10");

    const Workload w = parse_workload("install:250,writers=8,chunk=1m");
    CHECK(w.files == 250);
    CHECK(w.install.writers == 8);
    CHECK(w.install.chunk == MiB);
    CHECK(w.text() == "install:250,writers=8,chunk=1m");
    CHECK(parse_workload("install:1,chunk=512,writers=64").install.chunk == 512);
    CHECK(parse_workload("install:1,writers=1").install.writers == 1);
}

TEST_CASE("install: bad input names the option", "[estimate][install]") {
    CHECK(refusal("install:10,bogus=1").starts_with("install option 'bogus': unknown"));
    CHECK(refusal("install:10,chunk=0") == "install option 'chunk': must be a positive multiple of 512");
    CHECK(refusal("install:10,chunk=1000") == "install option 'chunk': must be a positive multiple of 512");
    CHECK(refusal("install:10,chunk=-4k").starts_with("install option 'chunk': '-4k' is not a size"));
    CHECK(refusal("install:10,chunk=4q").starts_with("install option 'chunk': '4q' is not a size"));
    CHECK(refusal("install:10,writers=0") == "install option 'writers': must be 1 to 64");
    CHECK(refusal("install:10,writers=65") == "install option 'writers': must be 1 to 64");
    CHECK(refusal("install:10,writers=-1").starts_with("install option 'writers': '-1' is not"));
    CHECK(refusal("install:10,writers").starts_with("install option 'writers': needs a value"));
    for (const char* n : {"install:0", "install:10000001", "install:", "install:x", "install:,writers=2"})
        CHECK(refusal(n).starts_with("install workload needs a file count from 1 to 10000000"));
    CHECK(refusal("install").starts_with("unknown workload 'install'"));
}

TEST_CASE("install: the number of writes is bounded", "[estimate][install]") {
    // ⌈12288/8192⌉ + ⌈6000/8192⌉ + ⌈8192/8192⌉ + 0 = 2 + 1 + 1 + 0.
    CHECK(install_writes(job(1, 8 * KiB), std::vector<std::uint64_t>{12288, 6000, 8192, 0}) == 4);
    const std::vector<std::uint64_t> at_limit = {InstallJob::kMaxWrites * 512};
    const std::vector<std::uint64_t> beyond = {InstallJob::kMaxWrites * 512 + 1};
    CHECK_NOTHROW(check_install_writes(job(4, 512), at_limit));
    try {
        check_install_writes(job(4, 512), beyond);
        FAIL("accepted 10,000,001 writes");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).starts_with("install option 'chunk': 1 files of the volume's sizes take 10000001 "
                                                "writes of 512 bytes, more than 10000000"));
    }
    CHECK_THROWS_AS(install_ios(volume_with(one_run()), beyond, job(4, 512), MiB), Error);
    // Sizes of a corrupt map: the sum saturates instead of wrapping below the limit.
    // 600 files of 2^64 − 1 bytes: 600 · 2^55 writes of 512 bytes, beyond 64 bits.
    const std::vector<std::uint64_t> huge(600, UINT64_MAX);
    CHECK(install_writes(job(1, 512), huge) == UINT64_MAX);
    CHECK_THROWS_AS(check_install_writes(job(1, 512), huge), Error);
}

TEST_CASE("install: one writer on one large free run writes every file contiguous", "[estimate][install]") {
    // Files A 12288 B (3 clusters), B 6000 B (2), C 8192 B (2); chunks of 8 KiB (2 clusters).
    //  A chunk 1: 2 cl, first chunk looks from the volume hint 0 → [100,102)       hint 102
    //  A chunk 2: 4096 B, 1 cl, from A's hint 102 (free) → 102: A = [100,103)
    //  B chunk 1: 6000 B, 2 cl, from the volume hint 103 → [103,105); IO 6144 B (sectors)
    //  C chunk 1: 2 cl from 105 → [105,107)
    const VolumeMap v = volume_with(one_run());
    const std::vector<std::uint64_t> sizes = {12288, 6000, 8192};
    const WriteIos w = install_ios(v, sizes, job(1, 8 * KiB), MiB);
    const std::vector<Io> expected = {
        {sector_of(100), 8192, true},
        {sector_of(102), 4096, true},
        {sector_of(103), 6144, true},
        {sector_of(105), 8192, true},
    };
    CHECK(w.ios == expected);
    CHECK(w.outcome.files == 3);
    CHECK(w.outcome.files_written == 3);
    CHECK(w.outcome.bytes_written == 12288 + 6000 + 8192);
    CHECK(w.outcome.fragments == 3);
    CHECK(w.outcome.fragmented_files == 0);
    // A's two writes and B's follow each other: +1; C follows B's 6144-byte IO inside
    // cluster 104: 2888 − (2872 + 12 − 1) = 5.
    const IoStats s = summarize_ios(w.ios);
    CHECK(s.sequential == 2);
    CHECK(s.writes == 4);

    // --max-io cuts a write: 8 KiB chunks at max-io 4 KiB are two IOs each.
    const WriteIos cut = install_ios(v, std::vector<std::uint64_t>{8192}, job(1, 8 * KiB), 4 * KiB);
    CHECK(cut.ios == std::vector<Io>{{sector_of(100), 4096, true}, {sector_of(101), 4096, true}});
}

TEST_CASE("install: two writers interleave their chunks and fragment each other", "[estimate][install]") {
    // The same files and chunks, writers 0 and 1 taking turns:
    //  round 1: w0 takes A, chunk 1 → [100,102) (volume hint 0)              hint 102
    //           w1 takes B, chunk 1 (6000 B, 2 cl) from the volume hint 102 → [102,104); B done
    //  round 2: w0 A chunk 2 (1 cl) from A's hint 102: taken → first fit from 102 → 104
    //           A = [100,102) + [104,105): 2 fragments
    //           w1 takes C, chunk 1 (2 cl) from the volume hint 105 → [105,107)
    const VolumeMap v = volume_with(one_run());
    const std::vector<std::uint64_t> sizes = {12288, 6000, 8192};
    const WriteIos w = install_ios(v, sizes, job(2, 8 * KiB), MiB);
    const std::vector<Io> expected = {
        {sector_of(100), 8192, true},  // A [0, 8 KiB)
        {sector_of(102), 6144, true},  // B
        {sector_of(104), 4096, true},  // A [8 KiB, 12 KiB)
        {sector_of(105), 8192, true},  // C
    };
    CHECK(w.ios == expected);
    CHECK(w.outcome.files_written == 3);
    CHECK(w.outcome.fragments == 4);
    CHECK(w.outcome.fragmented_files == 1);

    // Three writers: C starts in round 1 at [104,106), so A's second chunk goes to 106.
    const WriteIos three = install_ios(v, sizes, job(3, 8 * KiB), MiB);
    CHECK(three.ios == std::vector<Io>{{sector_of(100), 8192, true},
                                       {sector_of(102), 6144, true},
                                       {sector_of(104), 8192, true},
                                       {sector_of(106), 4096, true}});
    // More writers than files: the idle ones change nothing.
    CHECK(install_ios(v, sizes, job(64, 8 * KiB), MiB).ios == three.ios);
}

TEST_CASE("install: scattered free space fragments the files and adds IOs", "[estimate][install]") {
    // Two 20480-byte files (5 clusters) in 16 KiB chunks (4 clusters, then 1).
    const std::vector<std::uint64_t> sizes = {20480, 20480};

    // One writer on five 3-cluster extents:
    //  F1 chunk 1: 4 cl, no extent holds 4 → split from the hint 0: [100,103) + [110,111)
    //              two IOs (12 KiB at 100, 4 KiB at 110)                             hint 111
    //  F1 chunk 2: 1 cl from F1's hint 111 (free) → 111: F1 = [100,103) + [110,112)
    //  F2 chunk 1: 4 cl from the volume hint 112: split [112,113) + [120,123)          hint 123
    //  F2 chunk 2: 1 cl from 123 (used up) → first fit → 130: F2 = 112, 120–122, 130
    const VolumeMap frag = volume_with(scattered());
    const WriteIos f = install_ios(frag, sizes, job(1, 16 * KiB), MiB);
    const std::vector<Io> expected = {
        {sector_of(100), 12288, true}, {sector_of(110), 4096, true}, {sector_of(111), 4096, true},
        {sector_of(112), 4096, true},  {sector_of(120), 12288, true}, {sector_of(130), 4096, true},
    };
    CHECK(f.ios == expected);
    CHECK(f.outcome.files_written == 2);
    CHECK(f.outcome.fragments == 5);
    CHECK(f.outcome.fragmented_files == 2);

    // The same files on one large free run: F1 = [100,105), F2 = [105,110), one IO a chunk.
    const VolumeMap large = volume_with(one_run());
    const WriteIos l = install_ios(large, sizes, job(1, 16 * KiB), MiB);
    CHECK(l.ios.size() == 4);
    CHECK(l.outcome.fragments == 2);
    CHECK(l.outcome.fragmented_files == 0);
    CHECK(f.ios.size() > l.ios.size());

    // Two writers: on the large run they interleave (F1 [100,104) + 108, F2 [104,108) + 109:
    // both fragmented, 4 IOs); the scattered extents still give more IOs (6).
    const WriteIos l2 = install_ios(large, sizes, job(2, 16 * KiB), MiB);
    const WriteIos f2 = install_ios(frag, sizes, job(2, 16 * KiB), MiB);
    CHECK(l2.ios.size() == 4);
    CHECK(l2.outcome.fragmented_files == 2);
    CHECK(f2.ios.size() == 6);
    CHECK(f2.outcome.fragmented_files == 2);
    CHECK(f2.ios.size() > l2.ios.size());
}

TEST_CASE("install: a file that finds no room is stopped and counted", "[estimate][install]") {
    // 15 free clusters; files of 8, 8 and 2 clusters in 16 KiB chunks, one writer:
    // file 1 takes 8 (7 left), file 2 gets 4 then finds 3 < 4 and stops (3 left),
    // file 3 (2 clusters) still fits.
    const VolumeMap frag = volume_with(scattered());
    const WriteIos w = install_ios(frag, std::vector<std::uint64_t>{32768, 32768, 8192}, job(1, 16 * KiB), MiB);
    CHECK(w.outcome.files == 3);
    CHECK(w.outcome.files_written == 2);
    CHECK(w.outcome.bytes_written == 32768 + 8192);
    // The stopped file's first chunk was written: 16 KiB of it is in the stream.
    CHECK(summarize_ios(w.ios).written_bytes == 32768 + 16384 + 8192);
}

TEST_CASE("install: a consolidation plan's free space gives fewer fragments", "[estimate][install]") {
    // Before: files in [0,100) and the scattered extents free. After a consolidation plan
    // the same files sit elsewhere and the 15 free clusters are one run [100,115).
    // The files to write are sampled once, from the volume before, as estimate does.
    VolumeMap before = volume_with(scattered());
    before.streams = {test::stream(30, {{0, 0, 5}}), test::stream(31, {{0, 5, 5}})};
    ClusterSet merged;
    merged.add(test::r(100, 115));
    VolumeMap after = volume_with(merged);
    after.streams = {test::stream(30, {{0, 200, 5}}), test::stream(31, {{0, 205, 5}})};

    PreparedWorkload w;
    w.workload = parse_workload("install:2,writers=1,chunk=16k");
    w.write_sizes = write_file_sizes(before, 2);
    REQUIRE(w.write_sizes == std::vector<std::uint64_t>{20480, 20480});
    const WorkloadEstimate b = estimate_workload(before, w);
    const WorkloadEstimate a = estimate_workload(after, w);
    REQUIRE(b.write);
    REQUIRE(a.write);
    // Before: as in the scattered case above, 5 fragments, 6 IOs; after: 2 and 4.
    CHECK(b.write->fragments == 5);
    CHECK(a.write->fragments == 2);
    CHECK(a.write->fragmented_files == 0);
    CHECK(b.stats.ios == 6);
    CHECK(a.stats.ios == 4);
    CHECK(a.stats.bytes == b.stats.bytes);
}

TEST_CASE("install: thin >= lazy >= eager on a fresh written map", "[estimate][install][provisioning]") {
    const VolumeMap v = volume_with(one_run());
    PreparedWorkload w;
    w.workload = parse_workload("install:3,writers=2,chunk=8k");
    w.write_sizes = {12288, 6000, 8192};
    const WrittenMap nothing(64 * KiB);
    const IoStats s = estimate_workload(v, w, {}, &nothing).stats;
    test::check_thin_lazy_eager(s);
    CHECK(s.writes == s.ios);
    // Clusters 100–106 are bytes 1,458,176–1,486,847 of the disk: all inside the 64 KiB
    // block 22 ([1,441,792, 1,507,328)): one first write.
    CHECK(s.first_writes == 1);
    CHECK(test::provisioned(s, Provisioning::Thin).device_seconds.ssd >
          test::provisioned(s, Provisioning::Lazy).device_seconds.ssd);
    CHECK(test::provisioned(s, Provisioning::Lazy).device_seconds.ssd >
          test::provisioned(s, Provisioning::Eager).device_seconds.ssd);
}

TEST_CASE("install: the MFT zone joins only when the rest is full", "[estimate][install]") {
    // Zone [0,100) with [50,100) free; outside it only [200,204). One 32 KiB file (8
    // clusters) in 16 KiB chunks: chunk 1 looks from the zone's end 100 → [200,204); chunk 2
    // finds nothing outside the zone, the zone joins, nothing at or after the hint 204 →
    // wrap to [50,54).
    VolumeMap v = volume_with(ClusterSet{});
    v.mft_zone.add(test::r(0, 100));
    v.free.add(test::r(50, 100));
    v.free.add(test::r(200, 204));
    const WriteIos w = install_ios(v, std::vector<std::uint64_t>{32768}, job(4, 16 * KiB), MiB);
    CHECK(w.ios == std::vector<Io>{{sector_of(200), 16384, true}, {sector_of(50), 16384, true}});
    CHECK(w.outcome.fragments == 2);
    CHECK(w.outcome.fragmented_files == 1);
}

TEST_CASE("install: with its defaults, files of up to a chunk fragment only on scattered free space",
          "[estimate][install]") {
    // The default job (4 writers, 64 KiB chunks) writing eight 16 KiB files (4 clusters):
    // each file is one chunk, so the writers' turns never cut a file. Before: twelve free
    // extents of 3 clusters ([100,103), [110,113), … [210,213)), none holds a file, so every
    // file is split. After a consolidation plan the same 36 free clusters are one run
    // [100,136): every file is one run, one IO.
    ClusterSet pieces;
    for (std::int64_t lo = 100; lo < 220; lo += 10) pieces.add(test::r(lo, lo + 3));
    ClusterSet merged;
    merged.add(test::r(100, 136));
    const VolumeMap before = volume_with(pieces);
    const VolumeMap after = volume_with(merged);

    PreparedWorkload w;
    w.workload = parse_workload("install:8");
    REQUIRE(w.workload.install.writers == 4);
    REQUIRE(w.workload.install.chunk == 64 * KiB);
    w.write_sizes.assign(8, 16 * KiB);
    const WorkloadEstimate b = estimate_workload(before, w);
    const WorkloadEstimate a = estimate_workload(after, w);
    REQUIRE(b.write);
    REQUIRE(a.write);
    CHECK(b.write->files_written == 8);
    CHECK(b.write->fragmented_files == 8);
    CHECK(b.stats.ios > 8);
    CHECK(a.write->files_written == 8);
    CHECK(a.write->fragments == 8);
    CHECK(a.write->fragmented_files == 0);
    CHECK(a.stats.ios == 8);
    CHECK(a.stats.bytes == b.stats.bytes);
}

TEST_CASE("install: the estimate summarises the IOs as they are made, as summarize_ios does the list",
          "[estimate][install]") {
    const VolumeMap v = volume_with(scattered());
    PreparedWorkload w;
    w.workload = parse_workload("install:5,writers=2,chunk=4k");
    w.write_sizes = {4 * KiB, 20 * KiB, 0, 8 * KiB, 6 * KiB};
    const WriteIos listed = install_ios(v, w.write_sizes, w.workload.install, w.max_io);
    REQUIRE(listed.ios.size() > 5);
    const WrittenMap fresh(64 * KiB);
    const WorkloadEstimate e = estimate_workload(v, w, {}, &fresh);
    const IoStats want = summarize_ios(listed.ios, {}, &fresh);
    CHECK(e.stats.ios == want.ios);
    CHECK(e.stats.first_writes == want.first_writes);
    CHECK(e.stats.sequential == want.sequential);
    CHECK(e.stats.device_seconds.hdd == want.device_seconds.hdd);
    CHECK(e.stats.provisioned[2].device_seconds.array == want.provisioned[2].device_seconds.array);
    REQUIRE(e.write.has_value());
    CHECK(e.write->files_written == listed.outcome.files_written);
    CHECK(e.write->fragments == listed.outcome.fragments);
}
