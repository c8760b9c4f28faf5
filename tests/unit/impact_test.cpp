// SPDX-License-Identifier: GPL-2.0-or-later
// Impact figures (docs/impact.md) on a hand-built volume whose every number is counted by
// hand in the comments below.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

#include "core/image/host_layout.hpp"
#include "core/impact/content_map.hpp"
#include "core/impact/impact.hpp"
#include "core/impact/warnings.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/growth.hpp"
#include "support/memory_image.hpp"

using namespace guestfrag;

namespace {

constexpr std::uint64_t K = 1024;
constexpr std::uint64_t kOffset = 64 * K;  // the volume starts 64 KiB into the disk
constexpr std::uint64_t kCluster = 4 * K;

ByteSet::interval_type bytes(std::uint64_t lo, std::uint64_t hi) { return ByteSet::interval_type::right_open(lo, hi); }
std::uint64_t at(std::int64_t lcn) { return kOffset + static_cast<std::uint64_t>(lcn) * kCluster; }

Stream stream(std::uint64_t record, std::vector<Extent> extents, Placement placement = Placement::Movable) {
    Stream s;
    s.mft_record = record;
    s.type = static_cast<std::uint32_t>(AttrType::Data);
    s.extents = std::move(extents);
    for (const Extent& e : s.extents) s.size += static_cast<std::uint64_t>(e.clusters) * kCluster;
    s.allocated_size = s.size;
    s.placement = placement;
    return s;
}

/// 1 MiB volume of 4 KiB clusters at disk offset 64 KiB. In use: clusters [0, 100);
/// file 64 ($DATA at 10-11 and 20-21), file 65 (30), the VSS store file 32 (50-53).
/// \System Volume Information (record 30) holds the VSS catalog (31) and one store (32).
VolumeMap volume() {
    VolumeMap v;
    v.partition = 1;
    v.partition_offset = kOffset;
    v.cluster_size = kCluster;
    v.total_clusters = 256;
    v.free.add(ClusterSet::interval_type::right_open(100, 256));
    v.files = {
        {5, 5, true, "."},
        {30, 5, true, "System Volume Information"},
        {31, 30, false, "{3808876b-c176-4e48-b7ae-04046e6cc752}"},
        {32, 30, false, "{0a1b2c3d-0000-4000-8000-00000000abcd}{3808876B-C176-4E48-B7AE-04046E6CC752}"},
        {64, 5, false, "a.bin"},
        {65, 5, false, "b.bin"},
    };
    v.streams = {
        stream(32, {{0, 50, 4}}, Placement::Excluded),
        stream(64, {{0, 10, 2}, {2, 20, 2}}),
        stream(65, {{0, 30, 1}}),
    };
    return v;
}

/// Moves file 64 into clusters 100-103 and file 65 to cluster 105 (leaving 104 free, so
/// that file 65's cluster lands in the second half of an 8 KiB chunk).
Plan plan() {
    Plan p;
    p.strategy = "defrag";
    p.moves = {
        {64, "$DATA", 0, 10, 100, 2},
        {64, "$DATA", 2, 20, 102, 2},
        {65, "$DATA", 0, 30, 105, 1},
    };
    return p;
}

/// Content: 'A' in clusters 10, 11 and 21, 'B' in 20, 'C' in 30; zeros elsewhere.
std::vector<std::byte> disk() {
    std::vector<std::byte> d(2 * 1024 * K);
    const auto fill = [&](std::int64_t lcn, char c) {
        std::fill_n(d.begin() + static_cast<std::ptrdiff_t>(at(lcn)), kCluster, static_cast<std::byte>(c));
    };
    fill(10, 'A');
    fill(11, 'A');
    fill(21, 'A');
    fill(20, 'B');
    fill(30, 'C');
    return d;
}

Layer memory_layer(int depth, const std::string& path) {
    Layer layer;
    layer.depth = depth;
    layer.path = path;
    layer.format = ImageFormat::Raw;
    layer.granule_size = 64 * K;
    return layer;
}

/// Top layer (64 KiB granules) holds disk [0, 448K) and [576K, 640K); a parent holds
/// [448K, 512K), the granule that clusters 96-111 fall in.
std::vector<Layer> layers() {
    Layer top = memory_layer(0, "clone");
    top.allocated.add(bytes(0, 448 * K));
    top.allocated.add(bytes(576 * K, 640 * K));
    Layer parent = memory_layer(1, "base");
    parent.allocated.add(bytes(448 * K, 512 * K));
    return {top, parent};
}

PartitionTable table() {
    return {"msdos", {{1, kOffset, 1024 * K, "primary", "ntfs"}, {2, 32256, 16 * K, "primary", ""}}};
}

}  // namespace

TEST_CASE("content map: a move copies its source's current content", "[impact]") {
    Plan p;
    p.moves = {{64, "$DATA", 0, 10, 100, 2}, {64, "$DATA", 0, 100, 200, 1}, {65, "$DATA", 0, 30, 101, 1}};
    const ContentMap map(volume(), p);
    // Cluster 200 holds what cluster 10 held: the second move's source had been written by the first.
    CHECK(map.overrides(at(200), kCluster) == std::vector<ContentMap::Piece>{{at(200), kCluster, at(10)}});
    // Cluster 101 was overwritten by the third move; cluster 100 still holds cluster 10's copy.
    CHECK(map.overrides(at(99), 4 * kCluster) ==
          std::vector<ContentMap::Piece>{{at(100), kCluster, at(10)}, {at(101), kCluster, at(30)}});
    CHECK(map.overrides(at(0), 10 * kCluster).empty());
    CHECK(boost::icl::length(map.written()) == 3 * kCluster);  // clusters 100, 101 and 200
    // Sources as before-disk offsets: clusters 10-11 and 30 (the second move read cluster 10's copy).
    ByteSet read;
    read.add(bytes(at(10), at(12)));
    read.add(bytes(at(30), at(31)));
    CHECK(map.read() == read);
}

TEST_CASE("content map: random plans agree with a cluster-by-cluster replay", "[impact]") {
    // Moves of 1-8 clusters among clusters [0, 48), overlapping one another and their own
    // sources, replayed on an array holding each cluster's before-disk source.
    std::mt19937 random(11);
    for (int round = 0; round < 200; ++round) {
        INFO("round " << round);
        constexpr std::int64_t kClusters = 48;
        std::vector<std::int64_t> source(kClusters);
        std::iota(source.begin(), source.end(), 0);
        std::vector<bool> read(kClusters), written(kClusters);
        Plan p;
        for (int i = 0; i < 12; ++i) {
            const auto clusters = std::uniform_int_distribution<std::int64_t>(1, 8)(random);
            std::uniform_int_distribution<std::int64_t> lcn(0, kClusters - clusters);
            const std::int64_t from = lcn(random), to = lcn(random);
            p.moves.push_back({64, "$DATA", 0, from, to, clusters});
            const std::vector<std::int64_t> copied(source.begin() + from, source.begin() + from + clusters);
            for (std::int64_t c = 0; c < clusters; ++c) {
                read[static_cast<std::size_t>(copied[static_cast<std::size_t>(c)])] = true;
                source[static_cast<std::size_t>(to + c)] = copied[static_cast<std::size_t>(c)];
                written[static_cast<std::size_t>(to + c)] = true;
            }
        }
        const ContentMap map(volume(), p);
        std::vector<std::int64_t> mapped(kClusters);
        std::iota(mapped.begin(), mapped.end(), 0);
        for (const ContentMap::Piece& piece : map.overrides(at(0), kClusters * kCluster)) {
            REQUIRE(piece.length > 0);
            CHECK(piece.source != piece.disk);  // no piece maps onto itself
            for (std::uint64_t b = 0; b < piece.length; b += kCluster)
                mapped[(piece.disk + b - kOffset) / kCluster] = static_cast<std::int64_t>((piece.source + b - kOffset) / kCluster);
        }
        CHECK(mapped == source);
        for (std::int64_t c = 0; c < kClusters; ++c) {
            CHECK(boost::icl::contains(map.read(), at(c)) == read[static_cast<std::size_t>(c)]);
            CHECK(boost::icl::contains(map.written(), at(c)) == written[static_cast<std::size_t>(c)]);
        }
    }
}

TEST_CASE("impact figures of a hand-built plan", "[impact]") {
    const test::MemoryImage image(disk(), layers());
    const Impact impact = assess_impact(image, table(), volume(), plan());

    CHECK(impact.partition == 1);
    CHECK(impact.granule_size == 64 * K);
    CHECK(impact.moved_bytes == 5 * kCluster);
    CHECK(impact.written_bytes == 5 * kCluster);
    // All five destinations lie in disk granule [448K, 512K), which only the parent holds.
    CHECK(impact.growth.thin_growth_bytes == 0);
    CHECK(impact.growth.clone_delta_growth_bytes == 64 * K);
    // Free whole granules [512K, 1088K) meet the top layer in [576K, 640K), before and after.
    CHECK(impact.reclaimable_bytes_before == 64 * K);
    CHECK(impact.reclaimable_bytes_after == 64 * K);

    REQUIRE(impact.snapshot.size() == 2);
    CHECK(impact.snapshot[0].bytes == 5 * kCluster);  // 4 KiB blocks: the five clusters
    CHECK(impact.snapshot[1].bytes == 64 * K);        // 64 KiB blocks: one
    // The next backup reads that one block: one random read of 64 KiB on each model (SSD:
    // 80 µs + 65,536 B / 500 MB/s; array: 0.3 ms + 65,536 B / 1 GB/s).
    CHECK(impact.backup_delta_reads.ios == 1);
    CHECK(impact.backup_delta_reads.bytes == 64 * K);
    CHECK(impact.backup_delta_reads.writes == 0);
    CHECK(impact.backup_delta_reads.device_seconds.ssd == Approx(80e-6 + 65536 / 500e6));
    CHECK(impact.backup_delta_reads.device_seconds.array == Approx(0.3e-3 + 65536 / 1e9));
    // A deduplicator's re-scan is timed only when the storage runs one: in 4 KiB chunks it
    // reads clusters 100-103 and 105, two IOs (SSD: 2 × 80 µs + 20 KiB at 500 MB/s; array: a
    // random read, then one 4 KiB past its end, inside the read-ahead window).
    CHECK_FALSE(impact.dedup_rescan_reads);
    ImpactOptions deduplicating;
    deduplicating.dedup_rescan_chunk = 4 * K;
    const Impact rescanned = assess_impact(image, table(), volume(), plan(), deduplicating);
    REQUIRE(rescanned.dedup_rescan_reads);
    CHECK(rescanned.dedup_rescan_reads->ios == 2);
    CHECK(rescanned.dedup_rescan_reads->bytes == 5 * 4 * K);
    CHECK(rescanned.dedup_rescan_reads->device_seconds.ssd == Approx(2 * 80e-6 + 20480 / 500e6));
    CHECK(rescanned.dedup_rescan_reads->device_seconds.array == Approx(0.3e-3 + 0.05e-3 + 20480 / 1e9));
    deduplicating.dedup_rescan_chunk = 3 * K;
    CHECK_THROWS_WITH(assess_impact(image, table(), volume(), plan(), deduplicating),
                      "dedup chunk size 3072 is not a power of two between 512 B and 64 MiB");

    // Chunks written, aligned to disk offset 0 (cluster c is disk 4K-chunk 16 + c).
    REQUIRE(impact.dedup.size() == 4);
    CHECK(impact.dedup[0].chunk == 4 * K);
    CHECK(impact.dedup[0].changed_chunks == 5);  // clusters 100-103, 105
    CHECK(impact.dedup[1].changed_chunks == 3);  // pairs 100-101, 102-103, 104-105
    CHECK(impact.dedup[2].changed_chunks == 2);  // quads 100-103, 104-107
    CHECK(impact.dedup[3].changed_chunks == 2);  // eights 96-103, 104-111
    CHECK_FALSE(impact.dedup[0].deep);

    CHECK(impact.vss.catalog);
    CHECK(impact.vss.store_files == 1);
    CHECK(impact.vss.store_bytes == 16 * K);
    CHECK(impact.vss.copy_on_write);
    // Sources (volume-relative) 40K-48K, 80K-88K, 120K-124K in 16 KiB blocks: 32K-48K, 80K-96K, 112K-128K.
    CHECK(impact.vss.copy_on_write_bytes == 48 * K);

    REQUIRE(impact.alignment.size() == 2);
    CHECK_FALSE(impact.alignment[0].aligned_1mib);
    CHECK(impact.alignment[0].misaligned_chunks.empty());
    CHECK(impact.alignment[1].misaligned_chunks == std::vector<std::uint64_t>{4 * K, 8 * K, 16 * K, 32 * K});

    CHECK(impact.clone.parent_layers == 1);
    CHECK(impact.clone.shared_bytes == 4 * kCluster);  // in-use clusters 96-99 read through to the parent
    CHECK(impact.clone.sharing_lost_bytes == 0);       // every source lies in the top layer

    std::vector<std::pair<std::string, Severity>> warnings;
    for (const ImpactWarning& w : impact.warnings) warnings.emplace_back(w.code, w.severity);
    CHECK(warnings == std::vector<std::pair<std::string, Severity>>{
                          {"CLONE_DELTA_GROWTH", Severity::Warning},
                          {"VSS_COPY_ON_WRITE", Severity::Warning},
                          {"MISALIGNED_PARTITION", Severity::Warning},
                          {"SHARED_BASE_IMAGE", Severity::Info},
                          {"RECLAIMABLE_SPACE", Severity::Info},
                          {"SNAPSHOT_DELTA", Severity::Info},
                          {"DEDUP_LOSS", Severity::Info},
                          {"MISALIGNED_PARTITION", Severity::Info},
                      });
    const auto dedup = std::find_if(impact.warnings.begin(), impact.warnings.end(),
                                    [](const ImpactWarning& w) { return w.code == "DEDUP_LOSS"; });
    CHECK(dedup->bytes == 64 * K);  // the largest rewrite: two 32 KiB chunks
}

TEST_CASE("reclaim advice only where space can be given back: a thin disk, not a thick one", "[impact]") {
    const test::MemoryImage image(disk(), layers());
    const auto has_reclaim = [&](std::optional<Provisioning> type) {
        ImpactOptions options;
        if (type) options.provisioning = LayerProvisioning{*type, 1 << 20, false, "given"};
        const Impact impact = assess_impact(image, table(), volume(), plan(), options);
        REQUIRE(impact.reclaimable_bytes_before + impact.reclaimable_bytes_after > 0);
        return std::ranges::any_of(impact.warnings,
                                   [](const ImpactWarning& w) { return w.code == "RECLAIMABLE_SPACE"; });
    };
    CHECK(has_reclaim(std::nullopt));  // the image's layer: thin
    CHECK(has_reclaim(Provisioning::Thin));
    CHECK_FALSE(has_reclaim(Provisioning::Lazy));
    CHECK_FALSE(has_reclaim(Provisioning::Eager));
}

TEST_CASE("the shared-base warning agrees with the growth figures", "[impact]") {
    const test::MemoryImage image(disk(), layers());
    Impact impact;
    impact.clone.parent_layers = 1;
    impact.clone.shared_bytes = 64 * K;
    impact.clone.sharing_lost_bytes = 16 * K;
    const auto message = [&] {
        for (const ImpactWarning& w : impact_warnings(impact, image))
            if (w.code == "SHARED_BASE_IMAGE") return w.message;
        return std::string();
    };
    CHECK_THAT(message(),
               Catch::Contains("copies 16.0 KiB of shared base data into the clone, into blocks it "
                               "holds already (the delta does not grow)."));
    impact.growth.clone_delta_growth_bytes = 64 * K;
    CHECK_THAT(message(), Catch::Contains("into the clone, the delta growing by 64.0 KiB."));
}

TEST_CASE("deep dedup census of a hand-built disk", "[impact][deep]") {
    const test::MemoryImage image(disk(), layers());
    ImpactOptions options;
    options.deep = true;
    const Impact impact = assess_impact(image, table(), volume(), plan(), options);
    REQUIRE(impact.dedup.size() == 4);
    struct Expected {
        std::uint64_t chunks, rewritten, before, after;
    };
    // 4K: A×3, B, C and zeros before → 4 contents; after A×6, B×2, C×2: still 4.
    // 8K: AA, BA, C0 and zeros; after adds AA, BA and the new 0C → 5.
    // 16K: 00AA, BA00, 00C0 and zeros; after adds AABA and 0C00 → 6.
    // 32K: 00AA0000, 0000BA00, 000000C0 (clusters 8-31) and zeros; after adds 0000AABA, 0C000000 → 6.
    const Expected expected[] = {{512, 5, 4, 4}, {256, 3, 4, 5}, {128, 2, 4, 6}, {64, 2, 4, 6}};
    for (std::size_t i = 0; i < 4; ++i) {
        INFO("chunk " << impact.dedup[i].chunk);
        REQUIRE(impact.dedup[i].deep);
        const DedupFigures::Deep& d = *impact.dedup[i].deep;
        CHECK(d.chunks == expected[i].chunks);
        CHECK(d.rewritten_chunks == expected[i].rewritten);
        CHECK(d.unique_before == expected[i].before);
        CHECK(d.unique_after == expected[i].after);
    }
    CHECK(impact.dedup[0].deep->ratio_before() == Approx(128.0));
    const auto loss = std::find_if(impact.warnings.begin(), impact.warnings.end(),
                                   [](const ImpactWarning& w) { return w.code == "DEDUP_LOSS"; });
    REQUIRE(loss != impact.warnings.end());
    CHECK(loss->severity == Severity::Warning);
    CHECK(loss->bytes == 64 * K);  // two more distinct 32 KiB chunks
}

TEST_CASE("impact refuses bad chunk sizes and plans that do not apply", "[impact]") {
    const test::MemoryImage image(disk(), layers());
    ImpactOptions options;
    options.dedup_chunks = {4096, 3000};
    CHECK_THROWS_AS(assess_impact(image, table(), volume(), plan(), options), Error);
    Plan bad = plan();
    bad.moves[0].to_lcn = 50;  // the VSS store's clusters: not free
    CHECK_THROWS_AS(assess_impact(image, table(), volume(), bad), Error);
}

TEST_CASE("cancelling the deep pass", "[impact][deep]") {
    const test::MemoryImage image(disk(), layers());
    ImpactOptions options;
    options.deep = true;
    std::stop_source stop;
    stop.request_stop();
    CHECK_THROWS_AS(assess_impact(image, table(), volume(), plan(), options, Progress{{}, stop.get_token()}), Error);
}

TEST_CASE("rate limiter never lets reads run faster than the rate", "[impact][rate]") {
    RateLimiter limiter(4 * 1024 * K);  // 4 MiB/s, bucket of 1 MiB
    const auto start = RateLimiter::Clock::now();
    for (int i = 0; i < 12; ++i) limiter.acquire(256 * K);  // 3 MiB: 1 MiB from the bucket, 2 MiB at the rate
    CHECK(RateLimiter::Clock::now() - start >= std::chrono::milliseconds(450));
    RateLimiter unlimited(0);
    unlimited.acquire(std::uint64_t{1} << 40);  // returns at once
}

TEST_CASE("the after-plan layout places new grains in the extent file that covers them", "[impact][host]") {
    // A VMDK of three extents: sparse files for [0, 512K) and [512K, 768K), a FLAT file for
    // the rest, whose byte 4096 holds disk byte 768K.
    Layer top = memory_layer(0, "split.vmdk");
    top.format = ImageFormat::Vmdk;
    top.file_spans = {{0, std::nullopt}, {512 * K, std::nullopt}, {768 * K, 4096}};
    top.host_extents = {{0, 64 * K, 448 * K, 0}, {576 * K, 128 * K, 64 * K, 1}, {768 * K, 4096, 64 * K, 2}};
    top.allocated.add(bytes(0, 448 * K));
    top.allocated.add(bytes(576 * K, 640 * K));
    top.allocated.add(bytes(768 * K, 832 * K));
    top.zero.add(bytes(832 * K, 1024 * K));
    Plan p;
    p.moves = {
        {64, "$DATA", 0, 10, 100, 2},  // disk 464K: granule 448K, file 0, appended at its end (512K)
        {65, "$DATA", 0, 30, 150, 1},  // disk 664K: granule 640K, file 1, appended at 192K
        {64, "$DATA", 2, 20, 210, 1},  // disk 904K: granule 896K, the FLAT file, in place
        {64, "$DATA", 3, 21, 152, 1},  // disk 672K: granule 640K, already new
        {64, "$DATA", 2, 210, 170, 1},  // disk 744K: granule 704K, file 1 again, at 256K
    };
    const LayerAfterPlan after = top_layer_after_plan(top, volume(), p);
    CHECK(after.new_bytes == 4 * 64 * K);
    CHECK_FALSE(after.in_place);
    // Each file's new grains continue its last run, in the file and on the disk.
    const std::vector<HostExtent> expected = {{0, 64 * K, 512 * K, 0},
                                              {576 * K, 128 * K, 192 * K, 1},
                                              {768 * K, 4096, 64 * K, 2},
                                              {896 * K, 4096 + 128 * K, 64 * K, 2}};
    CHECK(after.layer.host_extents == expected);
    ByteSet allocated;
    allocated.add(bytes(0, 512 * K));
    allocated.add(bytes(576 * K, 832 * K));
    allocated.add(bytes(896 * K, 960 * K));
    CHECK(after.layer.allocated == allocated);
    ByteSet zero;
    zero.add(bytes(832 * K, 896 * K));
    zero.add(bytes(960 * K, 1024 * K));
    CHECK(after.layer.zero == zero);
    CHECK(after.layer.file_spans == top.file_spans);

    // Every file in place (FLAT extents only), as a raw file.
    top.file_spans = {{0, 0}, {512 * K, 0}, {768 * K, 4096}};
    const LayerAfterPlan flat = top_layer_after_plan(top, volume(), p);
    CHECK(flat.in_place);
    CHECK(std::find(flat.layer.host_extents.begin(), flat.layer.host_extents.end(),
                    HostExtent{448 * K, 448 * K, 64 * K, 0}) != flat.layer.host_extents.end());

    // The impact's host figures now come with a layer of several files too.
    const Impact impact = assess_impact(test::MemoryImage(disk(), {top}), table(), volume(), p);
    CHECK(impact.host.new_bytes == 4 * 64 * K);
    CHECK(impact.host.in_place);
}

TEST_CASE("the after-plan layout equals placing each new unit as the plan's moves first write it",
          "[impact][host]") {
    // The reference walks the moves in order and every unit of each, as the figures are
    // defined (docs/impact.md §9); the function sweeps the destinations in disk order.
    const auto reference = [](const Layer& top, const VolumeMap& v, const Plan& p) {
        const std::uint64_t unit = top.growth_granule();
        ByteSet held = whole_granules_touching(top.allocated, unit);
        std::vector<std::uint64_t> file_end(std::max<std::size_t>(top.file_spans.size(), 1), 0);
        for (const HostExtent& e : top.host_extents)
            file_end[e.file] = std::max(file_end[e.file], e.file_offset + e.length);
        std::vector<HostExtent> added;
        for (const Move& m : p.moves) {
            const std::uint64_t lo =
                v.partition_offset + static_cast<std::uint64_t>(m.to_lcn) * v.cluster_size;
            const std::uint64_t hi = lo + static_cast<std::uint64_t>(m.clusters) * v.cluster_size;
            for (std::uint64_t g = lo / unit * unit; g < hi; g += unit) {
                if (boost::icl::contains(held, g)) continue;
                held.add(bytes(g, g + unit));
                std::uint32_t file = 0;
                while (file + 1 < top.file_spans.size() && top.file_spans[file + 1].start <= g) ++file;
                const std::optional<std::uint64_t> in_place =
                    top.file_spans.empty() ? (top.format == ImageFormat::Raw ? std::optional{std::uint64_t{0}}
                                                                             : std::nullopt)
                                           : top.file_spans[file].in_place_offset;
                const std::uint64_t start = top.file_spans.empty() ? 0 : top.file_spans[file].start;
                const std::uint64_t where =
                    in_place ? *in_place + (g - start) : std::exchange(file_end[file], file_end[file] + unit);
                added.push_back({g, where, unit, file});
            }
        }
        std::ranges::sort(added, {}, &HostExtent::virtual_offset);
        std::vector<HostExtent> merged;
        std::ranges::merge(top.host_extents, added, std::back_inserter(merged), {},
                           &HostExtent::virtual_offset, &HostExtent::virtual_offset);
        std::vector<HostExtent> out;
        for (const HostExtent& e : merged) append_host_extent(out, e);
        return std::pair{out, held};
    };
    std::mt19937_64 rng(26);
    const auto pick = [&](std::uint64_t n) {
        return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng);
    };
    for (int round = 0; round < 300; ++round) {
        // A VMDK of two sparse extent files and a FLAT one, a single appending file, or a raw file.
        Layer top = memory_layer(0, "t");
        const std::uint64_t shape = pick(3);
        top.format = shape == 0 ? ImageFormat::Vmdk : shape == 1 ? ImageFormat::Qcow2 : ImageFormat::Raw;
        top.granule_size = shape == 2 ? 4 * K : std::uint64_t{1} << (13 + pick(4));  // 8-64 KiB
        if (shape == 0) top.file_spans = {{0, std::nullopt}, {512 * K, std::nullopt}, {768 * K, 4096}};
        top.host_extents.clear();
        top.allocated.clear();
        std::vector<std::uint64_t> file_end(3, 0);
        for (std::uint64_t g = 0; g < 1024 * K; g += top.granule_size)
            if (pick(4) == 0) {
                top.allocated.add(bytes(g, g + top.granule_size));
                const std::uint32_t file = shape == 0 ? (g < 512 * K ? 0 : g < 768 * K ? 1 : 2) : 0;
                const std::uint64_t where = shape == 2 ? g : file == 2 ? 4096 + g - 768 * K : file_end[file];
                file_end[file] = where + top.granule_size;
                append_host_extent(top.host_extents, {g, where, top.granule_size, file});
            }
        Plan p;
        std::int64_t last = 0;
        for (std::uint64_t n = pick(40); n > 0; --n) {
            // Often on from the move before, as a stream's pieces are; destinations may overlap.
            const auto clusters = static_cast<std::int64_t>(1 + pick(12));
            const std::int64_t to = pick(3) == 0 ? last : static_cast<std::int64_t>(pick(256 - 12));
            if (to + clusters > 256) continue;
            p.moves.push_back({64, "$DATA", 0, 10, to, clusters});
            last = to + clusters;
        }
        const LayerAfterPlan after = top_layer_after_plan(top, volume(), p);
        const auto [extents, held] = reference(top, volume(), p);
        const ByteSet added = held - whole_granules_touching(top.allocated, top.granule_size);
        INFO("round " << round);
        CHECK(after.layer.host_extents == extents);
        CHECK(after.layer.allocated == top.allocated + added);
        CHECK(after.new_bytes == boost::icl::length(added));
    }
}
