// SPDX-License-Identifier: GPL-2.0-or-later
// stream_digests hashes each stream's bytes as its runlist orders them, however its reads
// are batched, and only a piece of a stream the image cannot read fails it.
#include <catch2/catch.hpp>

#include <xxhash.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "core/apply/verify.hpp"
#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "support/hand_volume.hpp"

using namespace guestfrag;
using test::stream;

namespace {

constexpr std::uint64_t kCluster = 4096;

/// A disk in memory that counts its reads and refuses any read touching one poisoned cluster.
class PoisonedImage final : public DiskImage {
public:
    PoisonedImage(std::vector<std::byte> bytes, std::optional<std::int64_t> poisoned)
        : bytes_(std::move(bytes)), poisoned_(poisoned) {}
    [[nodiscard]] std::uint64_t size() const override { return bytes_.size(); }
    void read(std::uint64_t offset, std::span<std::byte> out) const override {
        ++reads;
        if (offset > bytes_.size() || out.size() > bytes_.size() - offset)
            throw Error(ErrorKind::Corrupt, "read past end of disk");
        if (poisoned_) {
            const std::uint64_t lo = static_cast<std::uint64_t>(*poisoned_) * kCluster;
            if (offset < lo + kCluster && offset + out.size() > lo) throw Error(ErrorKind::Io, "poisoned cluster");
        }
        std::memcpy(out.data(), bytes_.data() + offset, out.size());
    }
    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Raw; }
    [[nodiscard]] const std::string& path() const override { return path_; }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return layers_; }

    mutable std::atomic<unsigned> reads = 0;

private:
    std::vector<std::byte> bytes_;
    std::optional<std::int64_t> poisoned_;
    std::string path_ = "(memory)";
    std::vector<Layer> layers_;
};

std::vector<std::byte> random_bytes(std::size_t n) {
    std::mt19937_64 rng(7);
    std::vector<std::byte> out(n);
    for (std::byte& b : out) b = static_cast<std::byte>(rng());
    return out;
}

/// XXH3-64 of what `s` holds on `disk` (partition at byte 0), put together by hand.
std::uint64_t expected(const std::vector<std::byte>& disk, const Stream& s) {
    std::vector<std::byte> data;
    for (const Extent& e : s.extents) {
        const auto n = static_cast<std::size_t>(e.clusters) * kCluster;
        if (e.lcn == Extent::kSparse) {
            data.resize(data.size() + n);
        } else {
            const auto at = static_cast<std::ptrdiff_t>(e.lcn * static_cast<std::int64_t>(kCluster));
            data.insert(data.end(), disk.begin() + at, disk.begin() + at + static_cast<std::ptrdiff_t>(n));
        }
    }
    return XXH3_64bits(data.data(), data.size());
}

}  // namespace

TEST_CASE("stream digests: each stream's bytes in runlist order, a read per packed MiB", "[apply][verify]") {
    // 3 MiB: 768 clusters.
    const std::vector<std::byte> disk = random_bytes(768 * kCluster);
    VolumeMap v = test::empty_volume(768);
    // 100 one-cluster files packed at clusters 300–399, in reverse record order.
    for (std::int64_t i = 0; i < 100; ++i) v.streams.push_back(stream(1000 + static_cast<std::uint64_t>(i), {{0, 399 - i, 1}}));
    v.streams.push_back(stream(20, {{0, 40, 2}, {2, 10, 3}}));                     // runs out of disk order
    v.streams.push_back(stream(21, {{0, Extent::kSparse, 4}, {4, 60, 1}}));        // a hole first
    v.streams.push_back(stream(22, {{0, Extent::kSparse, 3}}));                    // nothing allocated
    v.streams.push_back(stream(23, {{0, 420, 300}}));                              // 1.17 MiB: two reads
    v.streams.push_back(stream(24, {{0, 5, 1}}));
    v.streams.push_back(stream(25, {{0, 7, 1}}));

    // Alone, or in pieces the workers take in turn (more workers than streams: a stream a
    // piece, and a worker a piece).
    const unsigned workers = GENERATE(1u, 2u, 3u, 500u);
    INFO(workers << " workers");
    const PoisonedImage image(disk, std::nullopt);
    const auto digests = stream_digests(
        image, v, {}, [&](const Stream& s) { return s.mft_record == 25; }, workers);
    REQUIRE(digests.size() == v.streams.size());
    for (std::size_t i = 0; i < v.streams.size(); ++i) {
        INFO("record " << v.streams[i].mft_record);
        if (v.streams[i].mft_record == 25)
            CHECK(!digests[i]);
        else
            CHECK(digests[i] == expected(disk, v.streams[i]));
    }
    // The packed files are served by one read; one read per extent would be 100.
    if (workers == 1) CHECK(image.reads < 12);
    // Nothing to hash: no share.
    VolumeMap none = test::empty_volume(768);
    CHECK(stream_digests(image, none, {}, {}, workers).empty());
}

TEST_CASE("stream digests: a cluster the image cannot read fails only the stream that holds it",
          "[apply][verify]") {
    const std::vector<std::byte> disk = random_bytes(64 * kCluster);
    VolumeMap v = test::empty_volume(64);
    v.streams.push_back(stream(30, {{0, 0, 1}}));
    v.streams.push_back(stream(31, {{0, 4, 2}}));  // within a window's reach of record 30
    // Cluster 2 lies between them, in no stream: the batched read that spans it fails, and
    // each piece is read alone.
    const unsigned workers = GENERATE(1u, 2u);
    INFO(workers << " workers");
    const PoisonedImage beside(disk, 2);
    const auto digests = stream_digests(beside, v, {}, {}, workers);
    CHECK(digests[0] == expected(disk, v.streams[0]));
    CHECK(digests[1] == expected(disk, v.streams[1]));
    // Cluster 5 is record 31's own: whichever worker hashes it, its failure is the answer.
    const PoisonedImage inside(disk, 5);
    CHECK_THROWS_WITH(stream_digests(inside, v, {}, {}, workers), "poisoned cluster");
}
