// SPDX-License-Identifier: GPL-2.0-or-later
// The pieces of `apply --output-format qcow2`: the copy-on-write disk the moves write into,
// and the qcow2 overlay writer it writes through, checked by qemu-img and guestfrag's own qcow2 reader.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/apply/cow_disk.hpp"
#include "core/apply/qcow2_writer.hpp"
#include "core/image/open_image.hpp"
#include "core/image/unique_fd.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/io/rate_limiter.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/memory_image.hpp"
#include "support/qemu_tools.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kCluster = Qcow2OverlayWriter::kClusterSize;

UniqueFd create(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(fd);
    return fd;
}

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
    std::vector<std::byte> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>((i * 131 + seed * 7 + i / 4096) & 0xff);
    return out;
}

}  // namespace

TEST_CASE("CopyOnWriteDisk: writes land in the overlay's clusters, reads merge them over the image, the image "
          "stays untouched",
          "[apply][overlay]") {
    test::require_tools({"qemu-img"});
    const std::vector<std::byte> base_bytes = pattern(8 * kCluster + 4096, 1);  // a partial last cluster
    const test::MemoryImage base(base_bytes);
    const test::WorkDir dir("cow-disk");
    const fs::path overlay = dir / "o.qcow2";
    const UniqueFd o = create(overlay);
    Qcow2OverlayWriter writer(o.get(), overlay.string(), base.size(), Qcow2Backing{"base.img", "raw"});
    RateLimiter limiter(0);
    CopyOnWriteDisk disk(base, writer, &limiter);
    CHECK(disk.size() == base.size());
    CHECK(disk.path() == overlay.string());

    const std::vector<std::byte> a = pattern(1000, 2);
    const std::vector<std::byte> b = pattern(2 * kCluster, 3);
    disk.write(5 * kCluster + 4096, a);      // cluster 5, filled from the image
    disk.write(kCluster - 500, b);           // clusters 0, 1 and 2: two partial, one whole
    disk.write(5 * kCluster + 4500, a);      // cluster 5 again: no second fill
    disk.write(base.size() - 10, std::span(a).first(10));  // the partial cluster 8
    std::vector<std::byte> want = base_bytes;
    std::copy(a.begin(), a.end(), want.begin() + 5 * kCluster + 4096);
    std::copy(b.begin(), b.end(), want.begin() + kCluster - 500);
    std::copy(a.begin(), a.end(), want.begin() + 5 * kCluster + 4500);
    std::copy(a.begin(), a.begin() + 10, want.end() - 10);
    CHECK(writer.clusters_stored() == 5);  // 5, 0, 1, 2, 8
    // Fills: cluster 5, 0, 2 (whole clusters) and the 4096 bytes of cluster 8; cluster 1 is
    // written whole.
    CHECK(limiter.requested() == 3 * kCluster + 4096);

    std::vector<std::byte> got(base.size());
    disk.read(0, got);
    CHECK(got == want);
    // Reads that start and end inside stored and unstored clusters.
    for (const auto& [at, n] : std::vector<std::pair<std::uint64_t, std::size_t>>{
             {kCluster - 100, 200}, {2 * kCluster + 10, kCluster}, {4 * kCluster, 3 * kCluster}, {base.size() - 20, 20}}) {
        std::vector<std::byte> part(n);
        disk.read(at, part);
        CHECK(std::equal(part.begin(), part.end(), want.begin() + static_cast<std::ptrdiff_t>(at)));
    }
    std::vector<std::byte> still(base.size());
    base.read(0, still);
    CHECK(still == base_bytes);

    std::vector<std::byte> one(2);
    CHECK(test::kind_of([&] { (void)disk.write(base.size() - 1, one); }) == ErrorKind::Corrupt);
    CHECK(test::kind_of([&] { (void)disk.read(base.size() - 1, one); }) == ErrorKind::Corrupt);

    // Cluster 3 written with the bytes it holds: stored, then released as unchanged.
    disk.write(3 * kCluster + 100, std::span(base_bytes).subspan(3 * kCluster + 100, 5000));
    CHECK(writer.clusters_stored() == 6);
    CHECK(disk.release_unchanged() == 1);
    CHECK(writer.clusters_stored() == 5);
    CHECK(!writer.stored_at(3));
    CHECK(writer.stored_clusters() == std::vector<std::uint64_t>{5, 0, 1, 2, 8});

    // The finished overlay over its backing file reads as the disk did, and stores exactly
    // the clusters that differ from the image.
    const std::uint64_t file_size = writer.finish();
    CHECK(file_size == fs::file_size(overlay));
    {
        const UniqueFd f = create(dir / "base.img");
        WritableRawFile(f.get(), "base.img").write(0, base_bytes);
    }
    const auto check = test::run({"qemu-img", "check", overlay.string()});
    INFO(check.out << check.err);
    CHECK(check.status == 0);
    const auto image = open_image(overlay.string());
    ByteSet stored;
    stored += boost::icl::interval<std::uint64_t>::right_open(0, 3 * kCluster);
    stored += boost::icl::interval<std::uint64_t>::right_open(5 * kCluster, 6 * kCluster);
    stored += boost::icl::interval<std::uint64_t>::right_open(8 * kCluster, base.size());
    CHECK(image->layers().front().allocated == stored);
    ByteSet mapped;
    for (const test::QemuExtent& e : test::qemu_map(overlay, "qcow2"))
        if (e.depth == 0 && e.data)
            mapped += boost::icl::interval<std::uint64_t>::right_open(e.start, e.start + e.length);
    CHECK(mapped == stored);
    image->read(0, got);
    CHECK(got == want);
}

TEST_CASE("Qcow2OverlayWriter: clusters across L2 tables over a raw backing file, read back by qemu-img and guestfrag",
          "[apply][overlay][qcow2]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("qcow2-writer");
    // More than two L2 tables' worth (512 MiB each) and a last cluster that is partial.
    const std::uint64_t size = (std::uint64_t{1} << 30) + (std::uint64_t{300} << 20) + 4096;
    const fs::path backing = dir / "base.img";
    const fs::path expected = dir / "expected.img";
    {
        const UniqueFd b = create(backing);
        REQUIRE(::ftruncate(b.get(), static_cast<off_t>(size)) == 0);
        WritableRawFile file(b.get(), backing.string());
        file.write(0, pattern(3 * kCluster, 9));  // the backing file's own data, partly covered
        file.write(size - 4096, pattern(4096, 10));
    }
    fs::copy_file(backing, expected);
    const std::uint64_t last = size / kCluster;  // partial
    // Not in guest order: data clusters lie in the file in the order they are written.
    const std::vector<std::uint64_t> clusters{8192, 1, 8192 * 2 + 5, 8191, last};
    const fs::path overlay = dir / "overlay.qcow2";
    {
        const UniqueFd o = create(overlay);
        const UniqueFd e(::open(expected.c_str(), O_RDWR | O_CLOEXEC));
        WritableRawFile want(e.get(), expected.string());
        Qcow2OverlayWriter writer(o.get(), overlay.string(), size, Qcow2Backing{"base.img", "raw"});
        for (std::size_t i = 0; i < clusters.size(); ++i) {
            const std::vector<std::byte> data = pattern(kCluster, 20 + static_cast<unsigned>(i));
            writer.write_cluster(clusters[i], data);
            const std::uint64_t at = clusters[i] * kCluster;
            want.write(at, std::span(data).first(std::min(kCluster, size - at)));
        }
        CHECK(test::kind_of([&] { (void)writer.write_cluster(clusters[1], pattern(kCluster, 1)); }) ==
              ErrorKind::Internal);
        CHECK(test::kind_of([&] { (void)writer.allocate(last + 1); }) == ErrorKind::Internal);
        CHECK(writer.clusters_stored() == clusters.size());
        const std::uint64_t file_size = writer.finish();
        CHECK(file_size == fs::file_size(overlay));
        // header, 5 data clusters, 3 L2 tables (L1 indices 0, 1, 2), L1, one refcount block, the table.
        CHECK(file_size == (1 + 5 + 3 + 1 + 1 + 1) * kCluster);
    }
    const auto check = test::run({"qemu-img", "check", overlay.string()});
    INFO(check.out << check.err);
    CHECK(check.status == 0);
    const auto compare = test::run({"qemu-img", "compare", "-f", "qcow2", "-F", "raw", overlay.string(), expected.string()});
    INFO(compare.out << compare.err);
    CHECK(compare.status == 0);
    std::uint64_t mapped = 0;
    for (const test::QemuExtent& e : test::qemu_map(overlay, "qcow2"))
        if (e.depth == 0 && e.data) mapped += e.length;
    CHECK(mapped == (clusters.size() - 1) * kCluster + (size - last * kCluster));

    const auto image = open_image(overlay.string());
    REQUIRE(image->layers().size() == 2);
    CHECK(image->layers()[1].path == backing.string());
    std::vector<std::byte> got(kCluster);
    image->read(8192 * kCluster, got);
    CHECK(got == pattern(kCluster, 20));
    image->read(kCluster, got);  // the backing file's data under the overlay's cluster 1
    CHECK(got == pattern(kCluster, 21));
    image->read(2 * kCluster, got);  // the backing file's own
    CHECK(std::equal(got.begin(), got.end(), pattern(3 * kCluster, 9).begin() + 2 * kCluster));
}

TEST_CASE("Qcow2OverlayWriter: an image without a backing file, and names qemu cannot record",
          "[apply][overlay][qcow2]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("qcow2-writer-alone");
    const fs::path overlay = dir / "alone.qcow2";
    const UniqueFd o = create(overlay);
    CHECK(test::kind_of([&] {
              (void)Qcow2OverlayWriter(o.get(), overlay.string(), 1 << 20, Qcow2Backing{std::string(1024, 'a'), "raw"});
          }) == ErrorKind::Unsupported);
    Qcow2OverlayWriter writer(o.get(), overlay.string(), 1 << 20, std::nullopt);
    writer.write_cluster(3, pattern(kCluster, 5));
    (void)writer.finish();
    const auto check = test::run({"qemu-img", "check", overlay.string()});
    INFO(check.out << check.err);
    CHECK(check.status == 0);
    const auto image = open_image(overlay.string());
    REQUIRE(image->layers().size() == 1);
    std::vector<std::byte> got(kCluster);
    image->read(3 * kCluster, got);
    CHECK(got == pattern(kCluster, 5));
    image->read(2 * kCluster, got);
    CHECK(got == std::vector<std::byte>(kCluster));
}
