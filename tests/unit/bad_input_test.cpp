// SPDX-License-Identifier: GPL-2.0-or-later
// Bad input ends in exit status 2 and one line "guestfrag: error: IMAGE: reason" (docs/design.md §6).
#include <catch2/catch.hpp>

#include <fstream>
#include <random>

#include "support/fixtures.hpp"
#include "support/ntfs_edit.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

MkImageOptions tiny(const std::string& table) {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = table;
    o.files = 200;
    o.seed = 3;
    return o;
}

// A private copy of a generated image that a test may damage.
fs::path copy_of(const std::string& key, const std::string& table, const std::string& name) {
    const fs::path source = test::generated_image(key, tiny(table));
    const fs::path copy = test::scratch_dir() / ("bad-" + name + ".img");
    fs::copy_file(source, copy, fs::copy_options::overwrite_existing);
    return copy;
}

void patch(const fs::path& path, std::uint64_t offset, const std::vector<std::uint8_t>& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(f.good());
}

std::vector<std::uint8_t> read_bytes(const fs::path& path, std::uint64_t offset, std::size_t n) {
    std::ifstream f(path, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    std::vector<std::uint8_t> out(n);
    f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
    return out;
}

std::vector<std::uint8_t> le(std::uint64_t value, std::size_t n) {
    std::vector<std::uint8_t> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
    return out;
}

template <typename T = std::uint64_t>
T field(const std::vector<std::uint8_t>& b, std::size_t off, std::size_t n) {
    T v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= static_cast<T>(b[off + i]) << (8 * i);
    return v;
}

// Byte offset of MFT record `record` in a bare volume whose $MFT starts contiguous.
std::uint64_t mft_record_offset(const fs::path& volume, std::uint64_t record) {
    const auto boot = read_bytes(volume, 0, 512);
    const std::uint64_t cluster = field(boot, 0x0B, 2) * field(boot, 0x0D, 1);
    const auto per_record = static_cast<std::int8_t>(boot[0x40]);
    const std::uint64_t record_size = per_record < 0 ? 1ull << -per_record : per_record * cluster;
    return field(boot, 0x30, 8) * cluster + record * record_size;
}

void require_bad_input(const fs::path& image, const std::string& reason_part) {
    const auto r = test::run_cli({"analyze", image.string()});
    INFO("stderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    const std::string prefix = "guestfrag: error: " + image.string() + ": ";
    CHECK(r.err.rfind(prefix, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(reason_part) != std::string::npos);
}

}  // namespace

TEST_CASE("missing image", "[bad-input]") {
    require_bad_input(test::scratch_dir() / "does-not-exist.img", "no such file");
}

TEST_CASE("a directory instead of an image", "[bad-input]") {
    const fs::path dir = test::scratch_dir() / "a-directory";
    fs::create_directories(dir);
    require_bad_input(dir, "directory");
}

TEST_CASE("empty image", "[bad-input]") {
    const fs::path empty = test::scratch_dir() / "empty.img";
    std::ofstream(empty).close();
    require_bad_input(empty, "empty");
}

TEST_CASE("random bytes", "[bad-input]") {
    const fs::path noise = test::scratch_dir() / "noise.img";
    std::mt19937_64 rng(42);
    std::ofstream out(noise, std::ios::binary);
    for (int i = 0; i < (1 << 17); ++i) {
        const std::uint64_t v = rng();
        out.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
    out.close();
    require_bad_input(noise, "no partition table and no NTFS");
}

TEST_CASE("truncated disk: partition runs past the end", "[bad-input]") {
    const fs::path image = copy_of("tiny-msdos", "msdos", "truncated");
    fs::resize_file(image, fs::file_size(image) / 2);
    require_bad_input(image, "past the end");
}

TEST_CASE("partition table entry past the end of the disk", "[bad-input]") {
    const fs::path image = copy_of("tiny-msdos", "msdos", "past-end");
    patch(image, 446 + 12, le(0x7FFFFFFF, 4));  // first entry's length in sectors
    require_bad_input(image, "past the end");
}

TEST_CASE("boot sector claiming an absurd size", "[bad-input]") {
    const fs::path image = copy_of("tiny-none", "none", "absurd-size");
    patch(image, 0x28, le(1ull << 40, 8));
    require_bad_input(image, "boot sector claims");
}

TEST_CASE("zeroed MFT", "[bad-input]") {
    const fs::path image = copy_of("tiny-none", "none", "zeroed-mft");
    patch(image, mft_record_offset(image, 0), std::vector<std::uint8_t>(64 * 1024, 0));
    require_bad_input(image, "cannot mount NTFS");
}

TEST_CASE("corrupt MFT record: torn update sequence", "[bad-input]") {
    const fs::path image = copy_of("tiny-none", "none", "torn-record");
    // Record 64 is the first file mkimage creates; the last two bytes of its first sector
    // must equal the update sequence number, so changing them tears the record.
    const std::uint64_t off = mft_record_offset(image, 64);
    REQUIRE(read_bytes(image, off, 4) == std::vector<std::uint8_t>{'F', 'I', 'L', 'E'});
    auto tail = read_bytes(image, off + 510, 2);
    tail[0] ^= 0xFF;
    patch(image, off + 510, tail);
    require_bad_input(image, "MFT record 64");
}

TEST_CASE("corrupt MFT record: attribute length out of bounds", "[bad-input]") {
    const fs::path image = copy_of("tiny-none", "none", "bad-attr");
    const std::uint64_t off = mft_record_offset(image, 64);
    const auto header = read_bytes(image, off, 48);
    const std::uint64_t first_attr = field(header, 20, 2);
    patch(image, off + first_attr + 4, le(0x7FFF0, 4));
    require_bad_input(image, "MFT record 64");
}

TEST_CASE("dirty volume", "[bad-input]") {
    const fs::path image = copy_of("tiny-none", "none", "dirty");
    test::mark_volume_dirty(image);
    require_bad_input(image, "dirty");
}

TEST_CASE("hibernated Windows", "[bad-input]") {
    const fs::path image = copy_of("tiny-none", "none", "hibernated");
    test::add_hibernation_file(image);
    require_bad_input(image, "hibernated");
}

TEST_CASE("a partition number that does not exist", "[bad-input]") {
    const fs::path image = test::generated_image("tiny-msdos", tiny("msdos"));
    const auto r = test::run_cli({"analyze", image.string(), "--partition", "9"});
    CHECK(r.status == 2);
    CHECK(r.err.find("no partition 9") != std::string::npos);
}
