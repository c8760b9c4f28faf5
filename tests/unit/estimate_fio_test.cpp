// SPDX-License-Identifier: GPL-2.0-or-later
// The fio: workload (docs/estimate.md §2): fio's job options, their bad-input rules and the
// IOs of each rw mode on the whole disk and on a new file, hand-computed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/estimate.hpp"
#include "core/estimate/fio_workload.hpp"
#include "core/estimate/workload.hpp"
#include "support/hand_volume.hpp"

using namespace guestfrag;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

std::vector<Io> disk_ios(const std::string& options, std::uint64_t disk = MiB) {
    return fio_ios(parse_fio_job(options), disk, test::empty_volume(1));
}

/// The message parse_fio_job / fio_ios throw for `options`, or "" when they do not.
std::string refusal(const std::string& options, std::uint64_t disk = MiB) {
    try {
        (void)disk_ios(options, disk);
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

std::vector<std::int64_t> lbns(const std::vector<Io>& ios) {
    std::vector<std::int64_t> out;
    for (const Io& io : ios) out.push_back(io.lbn);
    return out;
}

}  // namespace

TEST_CASE("fio: options in fio's vocabulary", "[estimate][fio]") {
    const FioJob d = parse_fio_job("");
    CHECK(d.rw == FioJob::Rw::Read);
    CHECK(d.bs == 4096);
    CHECK_FALSE(d.size);
    CHECK(d.target == FioJob::Target::Disk);
    const FioJob j =
        parse_fio_job("rw=randrw,bs=64k,size=10g,offset=1m,rwmixread=70,number_ios=5,randseed=7,target=file");
    CHECK(j.rw == FioJob::Rw::RandRw);
    CHECK(j.bs == 64 * KiB);
    CHECK(j.size == 10ull << 30);
    CHECK(j.offset == MiB);
    CHECK(j.rwmixread == 70);
    CHECK(j.number_ios == 5);
    CHECK(j.randseed == 7);
    CHECK(j.target == FioJob::Target::File);
    CHECK(parse_workload("fio:rw=write,bs=8K").text() == "fio:rw=write,bs=8K");
    CHECK(parse_fio_job("bs=4KiB").bs == 4096);
}

TEST_CASE("fio: bad options name the option", "[estimate][fio]") {
    CHECK(refusal("iodepth=4").starts_with("fio option 'iodepth': unknown"));
    CHECK(refusal("size=0").starts_with("fio option 'size': "));
    CHECK(refusal("size=-4k").starts_with("fio option 'size': "));
    CHECK(refusal("bs=1000").starts_with("fio option 'bs': "));
    CHECK(refusal("bs=0").starts_with("fio option 'bs': "));
    CHECK(refusal("rw=append").starts_with("fio option 'rw': "));
    CHECK(refusal("rwmixread=101").starts_with("fio option 'rwmixread': "));
    CHECK(refusal("offset=100").starts_with("fio option 'offset': "));
    CHECK(refusal("number_ios=0").starts_with("fio option 'number_ios': "));
    CHECK(refusal("target=lun").starts_with("fio option 'target': "));
    CHECK(refusal("bs").starts_with("fio option 'bs': needs a value"));
    CHECK(refusal("target=file").starts_with("fio option 'size': "));
    // A target larger than the disk.
    CHECK(refusal("size=2m").starts_with("fio option 'size': 2097152 bytes do not fit in the disk"));
    CHECK(refusal("offset=1m").starts_with("fio option 'offset': "));
    CHECK(refusal("offset=512k,size=768k").starts_with("fio option 'size': "));
    CHECK(refusal("bs=8k,size=4k").starts_with("fio option 'bs': "));
    CHECK_THROWS_AS(parse_workload("fio:bs=3"), Error);
}

TEST_CASE("fio: sequential jobs walk the region and wrap", "[estimate][fio]") {
    // 4 KiB IOs over [8 KiB, 24 KiB): sectors 16, 24, 32, 40, then around again.
    const std::vector<Io> w = disk_ios("rw=write,bs=4k,size=16k,offset=8k,number_ios=6");
    CHECK(lbns(w) == std::vector<std::int64_t>{16, 24, 32, 40, 16, 24});
    CHECK(std::all_of(w.begin(), w.end(), [](const Io& io) { return io.write && io.length == 4096; }));
    // Without number_ios: one pass. Without size: the disk from the offset.
    CHECK(disk_ios("rw=read,bs=256k").size() == 4);
    CHECK(disk_ios("rw=read,bs=256k,offset=512k").size() == 2);
    CHECK_FALSE(disk_ios("rw=read,bs=256k").front().write);
}

TEST_CASE("fio: random jobs visit every block once per pass, as the seed orders", "[estimate][fio]") {
    const std::vector<Io> r = disk_ios("rw=randread,bs=4k,size=64k,randseed=3");
    REQUIRE(r.size() == 16);
    std::vector<std::int64_t> sorted = lbns(r);
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::int64_t> every;
    for (std::int64_t i = 0; i < 16; ++i) every.push_back(i * 8);
    CHECK(sorted == every);
    CHECK(lbns(r) != every);  // not in order
    CHECK(lbns(disk_ios("rw=randread,bs=4k,size=64k,randseed=3")) == lbns(r));
    CHECK(lbns(disk_ios("rw=randread,bs=4k,size=64k,randseed=4")) != lbns(r));
    // A second pass visits all blocks again.
    const std::vector<Io> two = disk_ios("rw=randwrite,bs=4k,size=40k,number_ios=20");
    std::vector<std::int64_t> second(two.size() - 10);
    std::transform(two.begin() + 10, two.end(), second.begin(), [](const Io& io) { return io.lbn; });
    std::sort(second.begin(), second.end());
    CHECK(second == std::vector<std::int64_t>{0, 8, 16, 24, 32, 40, 48, 56, 64, 72});
}

TEST_CASE("fio: rwmixread splits reads and writes", "[estimate][fio]") {
    const auto writes = [](const std::vector<Io>& ios) {
        return std::count_if(ios.begin(), ios.end(), [](const Io& io) { return io.write; });
    };
    CHECK(writes(disk_ios("rw=randrw,rwmixread=0,bs=4k,size=64k")) == 16);
    CHECK(writes(disk_ios("rw=randrw,rwmixread=100,bs=4k,size=64k")) == 0);
    const std::vector<Io> mixed = disk_ios("rw=readwrite,rwmixread=70,bs=512,number_ios=10000");
    CHECK(writes(mixed) > 2700);
    CHECK(writes(mixed) < 3300);
}

TEST_CASE("fio: a new file is placed as NTFS places it and IOs split at its runs", "[estimate][fio]") {
    // 4 KiB clusters at byte 1 MiB: cluster c = sector 2048 + 8c. Free: [100,104), [200,203).
    VolumeMap v = test::empty_volume(1000);
    v.partition_offset = MiB;
    v.free.add(test::r(100, 104));
    v.free.add(test::r(200, 203));
    // 28 KiB = 7 clusters fits in no single free extent: 100–103, then 200–202.
    const FioJob job = parse_fio_job("rw=write,bs=12k,size=28k,target=file");
    const std::vector<Io> ios = fio_ios(job, 8 * MiB, v);
    // [0, 12 KiB) → clusters 100–102; [12 KiB, 24 KiB) → cluster 103, then 200–201.
    CHECK(ios == std::vector<Io>{{2848, 12288, true}, {2872, 4096, true}, {3648, 8192, true}});
    // Larger than the free space (28 KiB): refused, naming size.
    try {
        (void)fio_ios(parse_fio_job("rw=write,size=32k,target=file"), 8 * MiB, v);
        FAIL("accepted a file larger than the free space");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).starts_with("fio option 'size': "));
    }
}

TEST_CASE("fio: estimated with first writes through the pipeline's path", "[estimate][fio][provisioning]") {
    PreparedWorkload w;
    w.workload = parse_workload("fio:rw=write,bs=1m,size=4m");
    w.disk_size = 8 * MiB;
    const WrittenMap fresh(MiB);
    const IoStats s = estimate_workload(test::empty_volume(1), w, {}, &fresh).stats;
    CHECK(s.ios == 4);
    CHECK(s.writes == 4);
    CHECK(s.first_writes == 4);
    CHECK(s.provisioned[2].device_seconds.array > s.provisioned[1].device_seconds.array);
}

TEST_CASE("fio: the estimate summarises the IOs as they are made, as summarize_ios does the list",
          "[estimate][fio]") {
    VolumeMap v = test::empty_volume(4096);
    v.free.add(test::r(100, 4096));
    PreparedWorkload w;
    w.workload = parse_workload("fio:rw=randrw,bs=8k,size=4m,target=file,number_ios=3000,rwmixread=60");
    w.disk_size = 32 * MiB;
    const std::vector<Io> listed = fio_ios(w.workload.fio, w.disk_size, v);
    REQUIRE(listed.size() >= 3000);
    const WrittenMap fresh(MiB);
    const IoStats got = estimate_workload(v, w, {}, &fresh).stats;
    const IoStats want = summarize_ios(listed, {}, &fresh);
    CHECK(got.ios == want.ios);
    CHECK(got.writes == want.writes);
    CHECK(got.first_writes == want.first_writes);
    CHECK(got.sequential == want.sequential);
    CHECK(got.device_seconds.ssd == want.device_seconds.ssd);
    CHECK(got.provisioned[1].device_seconds.hdd == want.provisioned[1].device_seconds.hdd);
}
