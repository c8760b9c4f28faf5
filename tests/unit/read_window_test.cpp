// SPDX-License-Identifier: GPL-2.0-or-later
// ReadWindow serves neighbouring small reads from one read of the disk, never reads past
// what it was told will follow, and lets only the bytes asked for decide a failure.
#include <catch2/catch.hpp>

#include <cstring>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/image/read_window.hpp"
#include "support/memory_image.hpp"

using namespace guestfrag;

namespace {

constexpr std::uint64_t kSize = 1 << 20;

std::vector<std::byte> patterned() {
    std::vector<std::byte> out(kSize);
    for (std::uint64_t i = 0; i < kSize; ++i) out[i] = static_cast<std::byte>(i * 7 % 251);
    return out;
}

/// A disk that counts its reads and refuses any read that touches bytes [bad, bad + 1).
class Unreadable final : public DiskImage {
public:
    explicit Unreadable(std::uint64_t bad) : bad_(bad) {}
    [[nodiscard]] std::uint64_t size() const override { return kSize; }
    void read(std::uint64_t offset, std::span<std::byte> out) const override {
        ++reads;
        if (offset <= bad_ && offset + out.size() > bad_) throw Error(ErrorKind::Io, "bad sector");
        std::memcpy(out.data(), bytes_.data() + offset, out.size());
    }
    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Raw; }
    [[nodiscard]] const std::string& path() const override { return path_; }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return layers_; }

    mutable unsigned reads = 0;

private:
    std::uint64_t bad_;
    std::vector<std::byte> bytes_ = patterned();
    std::string path_ = "(memory)";
    std::vector<Layer> layers_;
};

/// `ranges[from…]` as ReadWindow's `next`.
auto following(const std::vector<DiskRange>& ranges, std::size_t from) {
    return [&ranges, from](std::size_t j) -> std::optional<DiskRange> {
        if (from + j >= ranges.size()) return std::nullopt;
        return ranges[from + j];
    };
}

bool same(std::span<const std::byte> got, std::uint64_t at) {
    static const std::vector<std::byte> disk = patterned();
    return std::memcmp(got.data(), disk.data() + at, got.size()) == 0;
}

}  // namespace

TEST_CASE("ReadWindow: ranges that follow within the gap and fit are read at once, others not", "[image]") {
    const test::MemoryImage image(patterned());
    ReadWindow window(image, 64 << 10, 4096);
    // Asked for in this order: the first three each begin within 4 KiB of the one before's
    // end; the fourth 8 KiB past the third's; the fifth follows it but would take a window
    // from the fourth past the 64 KiB capacity.
    const std::vector<DiskRange> asked{
        {10000, 11000}, {12000, 13000}, {16000, 20096}, {28288, 30000}, {30000, 94000}};
    for (std::size_t k = 0; k < asked.size(); ++k) {
        const auto [lo, hi] = asked[k];
        const std::span<const std::byte> got = window.read(lo, hi - lo, following(asked, k + 1));
        CHECK(got.size() == hi - lo);
        CHECK(same(got, lo));
    }
    CHECK(image.reads() == 3);  // [10000, 20096), [28288, 30000), [30000, 94000)

    // A range before the window's start ends the stretch: the window starts where asked.
    const std::vector<DiskRange> back{{5000, 5100}, {4000, 4100}};
    (void)window.read(5000, 100, following(back, 1));
    (void)window.read(4000, 100, following(back, 2));
    CHECK(image.reads() == 5);
}

TEST_CASE("ReadWindow: a miss nothing follows is read apart from the window, which is kept", "[image]") {
    const test::MemoryImage image(patterned());
    ReadWindow window(image, 64 << 10, 4096);
    // The first run of a file, the file's far run, then the first run of the next file.
    const std::vector<DiskRange> asked{{0, 100}, {200, 300}};
    SECTION("into the caller's bytes") {
        std::vector<std::byte> out(100);
        window.read_into(0, out, following(asked, 1));
        CHECK(same(out, 0));
        CHECK(image.reads() == 1);
        window.read_into(500000, out, following(asked, 1));
        CHECK(same(out, 500000));
        window.read_into(200, out, following(asked, 2));  // still in the window
        CHECK(same(out, 200));
        CHECK(image.reads() == 2);
    }
    SECTION("into a buffer of its own") {
        CHECK(same(window.read(0, 100, following(asked, 1)), 0));
        CHECK(image.reads() == 1);
        CHECK(same(window.read(500000, 100, following(asked, 1)), 500000));
        CHECK(same(window.read(200, 100, following(asked, 2)), 200));  // still in the window
        CHECK(image.reads() == 2);
        CHECK(same(window.read(600000, 1000, following(asked, 2)), 600000));  // the buffer again
        CHECK(image.reads() == 3);
    }
}

TEST_CASE("ReadWindow: what it cannot read past the bytes asked for does not fail them", "[image]") {
    const Unreadable image(30000);
    ReadWindow window(image, 64 << 10, 4096);
    const std::vector<DiskRange> asked{{20000, 21000}, {25000, 31000}};
    const std::span<const std::byte> got = window.read(20000, 1000, following(asked, 1));
    CHECK(same(got, 20000));
    CHECK(image.reads == 2);  // the stretched window failed; the bytes asked for alone did not
    // Stretched to [25000, 33000), then alone: both fail.
    const std::vector<DiskRange> after{{32000, 33000}};
    CHECK_THROWS_AS(window.read(25000, 6000, following(after, 0)), Error);
    CHECK(image.reads == 4);
    // A failed read leaves nothing in the window that a later read could take for the disk's.
    const std::vector<DiskRange> none;
    CHECK(same(window.read(32000, 1000, following(none, 0)), 32000));
    CHECK(image.reads == 5);
}
