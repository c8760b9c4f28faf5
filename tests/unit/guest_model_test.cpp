// SPDX-License-Identifier: GPL-2.0-or-later
// The guest model (docs/estimate.md §1.1) on hand-built volumes: page-granular reads, the
// read-ahead window and its growth, read-ahead past a file's end through the disk's cache,
// and $MFT record reads. Every expected IO is worked out in the comment above it, following
// Linux's on-demand read-ahead (mm/readahead.c) step by step.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/guest_model.hpp"
#include "core/estimate/stream_ios.hpp"

using guestfrag::AttrType;
using guestfrag::Extent;
using guestfrag::GuestProfile;
using guestfrag::GuestReader;
using guestfrag::Io;
using guestfrag::Stream;
using guestfrag::VolumeMap;

namespace {

constexpr auto kData = static_cast<std::uint32_t>(AttrType::Data);
constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

Stream file(std::uint64_t record, std::uint64_t size, std::vector<Extent> runs) {
    Stream s;
    s.mft_record = record;
    s.type = kData;
    s.size = size;
    s.allocated_size = size;
    s.extents = std::move(runs);
    return s;
}

/// 4 KiB clusters at byte 0 of the disk (cluster c = page c = sector 8c), 1 KiB records,
/// $MFT's 16 records in clusters 100-103: record r is at byte 409,600 + 1,024 r.
VolumeMap volume() {
    VolumeMap v;
    v.cluster_size = 4096;
    v.mft_record_size = 1024;
    v.total_clusters = 1 << 20;
    v.streams.push_back(file(0, 16 * KiB, {{0, 100, 4}}));
    return v;
}

GuestProfile profile(GuestProfile::Cache cache, GuestProfile::RecordReads records, std::uint64_t read_ahead) {
    GuestProfile p;
    p.name = "test";
    p.cache = cache;
    p.records = records;
    p.page_bytes = 4096;
    p.reader.request_bytes = 128 * KiB;
    p.read_ahead_bytes = read_ahead;
    return p;
}

std::vector<Io> read_all(const VolumeMap& v, const GuestProfile& p, const std::vector<Stream>& files) {
    std::vector<Io> ios;
    GuestReader reader(v, p, MiB, [&ios](const Io& io) { ios.push_back(io); });
    for (const Stream& s : files) reader.read(s);
    return ios;
}

}  // namespace

TEST_CASE("guest model: records and data through the disk's cache, read-ahead off and on") {
    const VolumeMap v = volume();
    // A: record 10, 8 KiB in clusters 1000-1001. B: record 11, 100 bytes in cluster 1002.
    const std::vector<Stream> files{file(10, 8192, {{0, 1000, 2}}), file(11, 100, {{0, 1002, 1}})};
    using C = GuestProfile::Cache;
    using R = GuestProfile::RecordReads;

    // Read-ahead off: every missing page is its own IO. A's record: byte 419,840 is in page
    // 102 (sector 816); A's data pages 1000 and 1001; B's record is in page 102 too (cached);
    // B's data page 1002.
    CHECK(read_all(v, profile(C::Disk, R::DataCache, 0), files) ==
          std::vector<Io>{{816, 4096}, {8000, 4096}, {8008, 4096}, {8016, 4096}});

    // 128 KiB (32 pages). A's record: page 102, no history before it (page 101 is not
    // cached) and no read before: a lone random read of that page. A's data: pages
    // 1000-1001 follow nothing (the last read ended in page 102): again as asked, one IO.
    // B's record: cached. B's data, page 1002: the read before ended in page 103 (record
    // 11 ends at byte 421,888), so not sequential, but pages 1001 and 1000 before it are
    // cached: context read-ahead of min(2 + 1, 32) = 3 pages from 1002 (sectors 8016-8039).
    CHECK(read_all(v, profile(C::Disk, R::DataCache, 128 * KiB), files) ==
          std::vector<Io>{{816, 4096}, {8000, 8192}, {8016, 12288}});

    // No record reads and 512-byte pages make the raw profile's extents again... except
    // that the raw profile has no cache at all: each file is append_stream_ios.
    const GuestProfile raw = *guestfrag::find_guest_profile("raw");
    CHECK(read_all(v, raw, files) == std::vector<Io>{{8000, 8192}, {8016, 512}});
}

TEST_CASE("guest model: read-ahead runs on past a file's end through the disk's cache") {
    const VolumeMap v = volume();
    // Three 8 KiB files one after another: clusters 3000-3001, 3002-3003, 3004-3005.
    const std::vector<Stream> files{file(20, 8192, {{0, 3000, 2}}), file(21, 8192, {{0, 3002, 2}}),
                                    file(22, 8192, {{0, 3004, 2}})};
    const GuestProfile p = profile(GuestProfile::Cache::Disk, GuestProfile::RecordReads::None, 128 * KiB);
    // The first: nothing before it, read as asked (pages 3000-3001). The second starts at
    // page 3002, the page after the last read: a sequential miss, so an initial window:
    // 2 pages rounded up to 2, ≤ 32/4 so doubled to 4 (3002-3005), async part 4 − 2 = 2,
    // its marker on page 3004. The third is cached; reading page 3004 hits the marker:
    // the expected index (3002 + 4 − 2), so the window moves on to 3006 and grows to 8
    // pages (4 ≤ 32/2: doubled), read at once (sectors 24,048-24,111).
    CHECK(read_all(v, p, files) == std::vector<Io>{{24000, 8192}, {24016, 16384}, {24048, 32768}});

    // Each file's own cache stops at its end: each file's first read is at page 0, an
    // initial window of 2 pages rounded up to 2, ×4 (≤ 32/32? no), ×2 (≤ 8): 4 pages, cut
    // at the file's 2.
    const GuestProfile own = profile(GuestProfile::Cache::File, GuestProfile::RecordReads::None, 128 * KiB);
    CHECK(read_all(v, own, files) == std::vector<Io>{{24000, 8192}, {24016, 8192}, {24032, 8192}});
}

TEST_CASE("guest model: the read-ahead window grows while the reader keeps up") {
    const VolumeMap v = volume();
    // One 1 MiB file in clusters 2000-2255 (sector 16,000), read in 128 KiB requests.
    const std::vector<Stream> one{file(30, MiB, {{0, 2000, 256}})};
    using C = GuestProfile::Cache;
    using R = GuestProfile::RecordReads;

    // Window 128 KiB (32 pages): the first read (page 0, 32 pages) starts at the file's
    // start: initial window 32 (32 > 32/4: the largest), async part 32, and at once the
    // next window merged in: 32 + 32 > 32, so 32 pages with the marker at page 16. Each
    // marker then moves the window on by 32 pages: eight 128 KiB IOs, none past the end.
    std::vector<Io> eight;
    for (std::int64_t i = 0; i < 8; ++i) eight.push_back({16000 + 256 * i, 128 * KiB});
    CHECK(read_all(v, profile(C::File, R::None, 128 * KiB), one) == eight);

    // Window 512 KiB (128 pages): initial 32 → 64 (32 ≤ 128/4: doubled), async 32, marker
    // at 32: IO of 256 KiB. The second read hits the marker, the expected index: the
    // window moves to 64 and grows to 128 (64 ≤ 64: doubled): 512 KiB, marker at 64. The
    // third hits it: window 192-319, cut at the file's end (256): 256 KiB.
    CHECK(read_all(v, profile(C::File, R::None, 512 * KiB), one) ==
          std::vector<Io>{{16000, 256 * KiB}, {16512, 512 * KiB}, {17536, 256 * KiB}});

    // Fragmented: the same window's pages on two runs are two IOs, never one across them.
    const std::vector<Stream> split{file(31, 16 * KiB, {{0, 4000, 2}, {2, 5000, 2}})};
    CHECK(read_all(v, profile(C::File, R::None, 128 * KiB), split) ==
          std::vector<Io>{{32000, 8192}, {40000, 8192}});
}

TEST_CASE("guest model: $MFT records read a page at a time or through $MFT's own cache") {
    const VolumeMap v = volume();
    // Records 4, 5 and 9, each file 4 KiB in its own cluster.
    const std::vector<Stream> files{file(4, 4096, {{0, 6000, 1}}), file(5, 4096, {{0, 6010, 1}}),
                                    file(9, 4096, {{0, 6020, 1}})};
    using C = GuestProfile::Cache;
    using R = GuestProfile::RecordReads;
    // Blocks: record 4 and 5 are in page 101 (bytes 413,696 and 414,720), record 9 in
    // page 102: two record IOs, never read ahead. Each file's data: one page.
    CHECK(read_all(v, profile(C::File, R::Blocks, 128 * KiB), files) ==
          std::vector<Io>{{808, 4096}, {48000, 4096}, {48080, 4096}, {816, 4096}, {48160, 4096}});
    // $MFT's own cache: the first record read is at $MFT's page 1, not its start, with no
    // read before it: read as asked (page 1 = cluster 101). Record 9 is in page 2, right
    // after the last read (which ended in page 1, record 5 ending at byte 6,144): a
    // sequential miss, initial window 1 → ×4 = 4 pages from page 2, cut at $MFT's end
    // (4 pages): pages 2-3, one IO.
    CHECK(read_all(v, profile(C::File, R::MftCache, 128 * KiB), files) ==
          std::vector<Io>{{808, 4096}, {48000, 4096}, {48080, 4096}, {816, 8192}, {48160, 4096}});
}

TEST_CASE("guest model: the named profiles and the read-ahead option") {
    for (const char* name : {"windows", "linux-ntfs3g", "linux-ntfs3", "raw"})
        CHECK(guestfrag::find_guest_profile(name).has_value());
    CHECK_FALSE(guestfrag::find_guest_profile("linux").has_value());
    CHECK(guestfrag::default_guest_profile().name == "windows");
    const GuestProfile p = *guestfrag::find_guest_profile("linux-ntfs3g");
    CHECK(guestfrag::with_read_ahead(p, MiB).read_ahead_bytes == MiB);
    CHECK(guestfrag::with_read_ahead(p, 0).read_ahead_bytes == 0);
    CHECK_THROWS_AS(guestfrag::with_read_ahead(p, 1000), guestfrag::Error);
    CHECK_THROWS_AS(guestfrag::with_read_ahead(p, 128 * MiB), guestfrag::Error);
    // The reader refuses what append_stream_ios refuses.
    VolumeMap bad = volume();
    bad.cluster_size = 1000;
    CHECK_THROWS_AS(GuestReader(bad, p, MiB, [](const Io&) {}), guestfrag::Error);
    CHECK_THROWS_AS(GuestReader(volume(), p, 1000, [](const Io&) {}), guestfrag::Error);
}

TEST_CASE(
    "guest model: ntfs3 reads the block holding a file's last byte alone, before the pages ahead of it") {
    const VolumeMap v = volume();
    // The named profile: records past $MFT's 16 read nothing here, so only data IOs show.
    const GuestProfile ntfs3 = *guestfrag::find_guest_profile("linux-ntfs3");
    // 12,388 bytes in clusters 7000-7003 (sector 56,000). One request of 4 pages at the
    // file's start: initial window 4 → 8 (4 ≤ 64/4: doubled; the window is 2 × 128 KiB,
    // cat's sequential advice), cut at the file's 4 pages, one run. Page 3 holds byte
    // 12,387: read alone first (sector 56,024), then pages 0-2.
    CHECK(read_all(v, ntfs3, {file(40, 3 * 4096 + 100, {{0, 7000, 4}})}) ==
          std::vector<Io>{{56024, 4096}, {56000, 12288}});
    // Fragmented, 16,385 bytes: pages 0-1 in 8000-8001, 2-3 in 8100-8101, 4 in 8200. The
    // window's first run goes out as the next does not continue it; the second waits while
    // the tail page (8200) is read; then it goes.
    CHECK(read_all(v, ntfs3, {file(41, 4 * 4096 + 1, {{0, 8000, 2}, {2, 8100, 2}, {4, 8200, 1}})}) ==
          std::vector<Io>{{64000, 8192}, {65600, 4096}, {64800, 8192}});
    // A size that ends on a block's end: nothing to zero past it, one IO.
    CHECK(read_all(v, ntfs3, {file(42, 8192, {{0, 9000, 2}})}) == std::vector<Io>{{72000, 8192}});
    // 512-byte clusters: the tail block is one cluster. 1,000 bytes in clusters 80,000-
    // 80,001 (sector 80,000): byte 999 is in the second: sector 80,001 alone, then 80,000.
    VolumeMap small = v;
    small.cluster_size = 512;
    CHECK(read_all(small, ntfs3, {file(43, 1000, {{0, 80000, 2}})}) ==
          std::vector<Io>{{80001, 512}, {80000, 512}});
}

TEST_CASE("guest model: a reader that advises sequential access reads ahead twice the window") {
    const VolumeMap v = volume();
    // The 1 MiB file of the window test, in clusters 2000-2255, 128 KiB requests. cat
    // advises POSIX_FADV_SEQUENTIAL: the file's window is 2 × 128 KiB = 64 pages. First
    // read: initial 32 → 64 (the largest: 32 > 64/4), async 64 − 32 = 32, marker at 32:
    // 256 KiB. Each later marker moves the window on by 64 pages (64 > 64/2: the
    // largest): four 256 KiB IOs, as the traced ntfs3 guest sends them.
    GuestProfile p = profile(GuestProfile::Cache::File, GuestProfile::RecordReads::None, 128 * KiB);
    p.reader.sequential_advice = true;
    std::vector<Io> four;
    for (std::int64_t i = 0; i < 4; ++i) four.push_back({16000 + 512 * i, 256 * KiB});
    CHECK(read_all(v, p, {file(30, MiB, {{0, 2000, 256}})}) == four);
}

TEST_CASE("guest model: tar reads each file in what is left of its 10 KiB records") {
    const VolumeMap v = volume();
    GuestProfile p = guestfrag::with_reader(*guestfrag::find_guest_profile("linux-ntfs3"), "tar");
    CHECK(p.reader.request_bytes == 10 * KiB);
    CHECK_FALSE(p.reader.sequential_advice);
    p.records = GuestProfile::RecordReads::None;  // data IOs only
    p.tail_block_first = false;
    // A: 38,400 bytes (75 blocks) in clusters 10000-10009 (sector 80,000), after its
    // header at the archive's start. Reads: [0, 9,728) (the record's rest), then 10 KiB
    // each. The first asks for pages 0-2: initial window 3 → 4 → 8 (4 ≤ 32/4: doubled),
    // async 8 − 3 = 5, marker at 3: pages 0-7, 32 KiB. The second ([9,728, 19,968): pages
    // 2-4) reaches the marker, the expected index: the window moves to 8 and grows to 16
    // (8 ≤ 32/2: doubled), cut at the file's 10 pages: pages 8-9. The rest is cached.
    // B: 20,000 bytes in clusters 10100-10104 (sector 80,800). The archive stands at
    // 512 + 38,400 = 38,912, 8,192 into its record; B's header leaves 1,536 bytes of it:
    // the first read asks for page 0 alone: initial window 1 → 4 (1 ≤ 32/32: fourfold),
    // async 3, marker at 1: pages 0-3. The second ([1,536, 11,776): pages 0-2) reaches
    // the marker: the window moves to 4, the file's last page.
    const std::vector<Stream> files{file(50, 38400, {{0, 10000, 10}}), file(51, 20000, {{0, 10100, 5}})};
    CHECK(read_all(v, p, files) ==
          std::vector<Io>{{80000, 32 * KiB}, {80064, 8 * KiB}, {80800, 16 * KiB}, {80832, 4 * KiB}});
    // cat's 128 KiB requests read each file in one window.
    p.reader = guestfrag::file_readers()[0];
    CHECK(read_all(v, p, files) == std::vector<Io>{{80000, 40 * KiB}, {80800, 20 * KiB}});

    CHECK_THROWS_WITH(guestfrag::with_reader(p, "dd"), "no reader named dd (cat, tar)");
    // An archive's records are whole 512-byte blocks.
    p.reader = guestfrag::file_readers()[1];
    p.reader.request_bytes = 1000;
    CHECK_THROWS_AS(GuestReader(v, p, MiB, [](const Io&) {}), guestfrag::Error);
    // Windows' cache manager asks its own cache: no reader to choose.
    CHECK_THROWS_AS(guestfrag::with_reader(*guestfrag::find_guest_profile("windows"), "cat"),
                    guestfrag::Error);
}

TEST_CASE("guest model: under ntfs-3g each file's FUSE cache asks for its window through the disk's cache") {
    const VolumeMap v = volume();
    GuestProfile p = guestfrag::with_reader(*guestfrag::find_guest_profile("linux-ntfs3g"), "tar");
    CHECK(p.layer_read_ahead_bytes == 128 * KiB);
    CHECK(p.layer_request_bytes == 128 * KiB);
    p.records = GuestProfile::RecordReads::None;  // data IOs only
    // A: 40 KiB in clusters 1000-1009 (sector 8,000), after its header at the archive's
    // start. tar's first read, [0, 9,728), asks FUSE's cache for pages 0-2: initial window
    // 3 → 4 → 8 (4 ≤ 32/4: doubled), async 5, marker at 3; the cache asks ntfs-3g for
    // pages 0-7, which reads clusters 1000-1007 from the disk's cache: nothing before them
    // cached, no read before, a lone read of the 8 pages (32 KiB). tar's second read
    // reaches the marker: FUSE's window moves to page 8 and grows to 16, cut at the file's
    // 10 pages: ntfs-3g reads clusters 1008-1009, right after the disk's last read, a
    // sequential miss: the disk's initial window 2 → 4 (2 ≤ 32/4: doubled), running on
    // 2 pages past the file's end (16 KiB). The rest is cached.
    const std::vector<Stream> a{file(50, 40 * KiB, {{0, 1000, 10}})};
    CHECK(read_all(v, p, a) == std::vector<Io>{{8000, 32 * KiB}, {8064, 16 * KiB}});
    // cat's 128 KiB read and its sequential advice: FUSE's window 2 × 128 KiB, the initial
    // 32 pages → 64 (the largest), cut at the file's 10; one request for pages 0-9, a lone
    // read of clusters 1000-1009.
    CHECK(read_all(v, guestfrag::with_reader(p, "cat"), a) == std::vector<Io>{{8000, 40 * KiB}});
    // The disk's read_ahead_kb is not FUSE's: a window of 0 reads the disk a page at a time.
    const std::vector<Io> pages = read_all(v, guestfrag::with_read_ahead(p, 0), a);
    CHECK(pages.size() == 10);
    // A cache in front of the disk's that sends no requests is refused.
    p.layer_request_bytes = 0;
    CHECK_THROWS_AS(GuestReader(v, p, MiB, [](const Io&) {}), guestfrag::Error);
}

TEST_CASE("guest model: a read after cached pages reads ahead as far as they go, unless they are no longer") {
    const VolumeMap v = volume();
    // Through the disk's cache, window 128 KiB (32 pages), each file one request.
    // A: 16 KiB in clusters 5000-5003: nothing before it cached, no read before it: read as
    // asked, pages 5000-5003. B: 4 KiB at 7000, the same: page 7000.
    // C: 4 KiB at 5004. Pages 5000-5003 before it are cached, 4 pages of history, more than
    // the 1 page asked: context read-ahead of 4 + 1 pages, 5004-5008.
    // D: 4 KiB at 7001. Page 7000 before it is cached, 1 page of history, no more than the
    // page asked: a random read (try_context_readahead's "size <= req_size"), page 7001 alone.
    const std::vector<Stream> files{file(60, 16 * KiB, {{0, 5000, 4}}), file(61, 4096, {{0, 7000, 1}}),
                                    file(62, 4096, {{0, 5004, 1}}), file(63, 4096, {{0, 7001, 1}})};
    CHECK(
        read_all(v, profile(GuestProfile::Cache::Disk, GuestProfile::RecordReads::None, 128 * KiB), files) ==
        std::vector<Io>{{40000, 16 * KiB}, {56000, 4096}, {40032, 20 * KiB}, {56008, 4096}});
}

TEST_CASE("guest model: opening a file whose data lies in its record reads just the record") {
    const VolumeMap v = volume();
    using C = GuestProfile::Cache;
    using R = GuestProfile::RecordReads;
    // Records 4 and 9: pages 101 and 102 of the disk (sectors 808 and 816), each read once
    // however often its files are opened; the raw profile reads no records.
    for (const GuestProfile& p :
         {profile(C::File, R::Blocks, 128 * KiB), profile(C::Disk, R::DataCache, 0)}) {
        std::vector<Io> ios;
        GuestReader reader(v, p, MiB, [&ios](const Io& io) { ios.push_back(io); });
        reader.open(4);
        reader.open(9);
        reader.open(4);
        CHECK(ios == std::vector<Io>{{808, 4096}, {816, 4096}});
    }
    std::vector<Io> none;
    GuestReader raw(v, *guestfrag::find_guest_profile("raw"), MiB,
                    [&none](const Io& io) { none.push_back(io); });
    raw.open(4);
    CHECK(none.empty());
}
