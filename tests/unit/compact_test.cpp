// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag compact`: a new image holding only what NTFS uses, packed into the fewest
// granules. Oracles: The Sleuth Kit (blkls for the free clusters, tsk_recover and icat for
// every file), qemu-img (map, check, compare) and the host file system's own map of the raw
// output.
// GCC 12 takes the std::set::swap inside boost::icl's operator& for storing a local's
// address (-Wdangling-pointer; the set swapped into is the one returned), depending on
// what this file inlines around it: a false positive, silenced for this file alone.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "analyzers/layer_usage.hpp"
#include "core/apply/disk_copy.hpp"
#include "core/apply/mover.hpp"
#include "core/apply/sparsify.hpp"
#include "core/apply/verify.hpp"
#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/raw_image.hpp"
#include "core/image/unique_fd.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/apply.hpp"
#include "pipeline/compact.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/step_info.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/hand_volume.hpp"
#include "support/memory_image.hpp"
#include "support/qemu_tools.hpp"
#include "support/tsk_oracle.hpp"

using namespace guestfrag;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// 64 MiB, MBR, 600 files of which 40 % deleted: free clusters that still hold the deleted
/// files' data, scattered through the volume.
fs::path compact_image() {
    MkImageOptions o;
    o.disk_size = 64ull << 20;
    o.table = "msdos";
    o.files = 600;
    o.interleave = 8;
    o.delete_fraction = 0.4;
    o.seed = 41;
    return test::generated_image("compact-mbr", o);
}

std::uint64_t partition_sector(const fs::path& image) { return test::mmls_partitions(image).at(0).first; }

/// The free clusters of the NTFS volume at `sector` by The Sleuth Kit (`blkls -A -l`), as
/// virtual-disk bytes.
ByteSet tsk_free_bytes(const fs::path& image, std::uint64_t sector, std::uint64_t cluster) {
    const auto r = test::run({"blkls", "-A", "-l", "-o", std::to_string(sector), image.string()});
    REQUIRE(r.status == 0);
    ByteSet free;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0])) || !line.ends_with("|f"))
            continue;
        const std::uint64_t at = sector * 512 + std::stoull(line) * cluster;
        free += ByteSet::interval_type::right_open(at, at + cluster);
    }
    return free;
}

ByteSet qemu_data(const fs::path& image, const std::string& format) {
    ByteSet data;
    for (const auto& e : test::qemu_map(image, format))
        if (e.data) data += ByteSet::interval_type::right_open(e.start, e.start + e.length);
    return data;
}

std::uint64_t granules_of(const ByteSet& bytes, std::uint64_t granule) {
    ByteSet widened;
    for (const auto& r : bytes)
        widened += ByteSet::interval_type::right_open(r.lower() / granule * granule,
                                                      (r.upper() + granule - 1) / granule * granule);
    return boost::icl::length(widened) / granule;
}

/// Every regular file and stream TSK lists in `a` has the same contents in `b`; with
/// `moved`, but the three that record moves ($MFT, $MFTMirr, $Bitmap; docs/apply.md).
void check_same_files(const fs::path& a, const fs::path& b, std::uint64_t sector, bool moved) {
    const auto files = test::tsk_files(a, sector);
    REQUIRE(files.size() > 300);
    const auto files_b = test::tsk_files(b, sector);
    CHECK(files_b == files);
    const auto in = test::tsk_contents(a, sector, files);
    const auto out = test::tsk_contents(b, sector, files_b);
    REQUIRE(in.size() == files.size());
    for (const auto& [path, contents] : in) {
        if (moved && (path == "$MFT" || path == "$MFTMirr" || path == "$Bitmap")) continue;
        INFO(path);
        CHECK(out.at(path) == contents);
    }
}

/// `size` bytes, byte i being i % modulus + 1: none zero, and each unlike its neighbours'.
std::shared_ptr<std::vector<std::byte>> patterned(std::uint64_t size, unsigned modulus) {
    auto bytes = std::make_shared<std::vector<std::byte>>(size);
    for (std::uint64_t i = 0; i < size; ++i) (*bytes)[i] = static_cast<std::byte>(i % modulus + 1);
    return bytes;
}

/// A new empty file at `path`, open for reading and writing.
UniqueFd new_file(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT, 0600));
    REQUIRE(fd.get() >= 0);
    return fd;
}

Json compact(const std::vector<std::string>& extra, const fs::path& image, const fs::path& out) {
    std::vector<std::string> args{"compact", image.string(), "-o", out.string(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = test::run_cli(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return Json::parse(r.out);
}

}  // namespace

TEST_CASE("compact writes a raw disk that stores no NTFS-free cluster and the same files", "[compact]") {
    test::require_tools({"blkls", "icat", "fls", "mmls", "qemu-img"});
    const fs::path image = compact_image();
    const std::uint64_t before = test::file_fingerprint(image);
    const std::uint64_t sector = partition_sector(image);
    test::WorkDir dir("compact-raw");

    const fs::path sparse = dir / "sparse.raw";
    const Json plain = compact({"--no-pack"}, image, sparse);
    const fs::path packed = dir / "packed.raw";
    const Json doc = compact({"--granule", "64K"}, image, packed);
    CHECK(test::file_fingerprint(image) == before);  // the input is only read
    // The output gets the mode a new file gets under the umask, as cp's copies do.
    const mode_t mask = ::umask(022);
    ::umask(mask);
    CHECK(static_cast<mode_t>(fs::status(packed).permissions()) == (0666 & ~mask));

    for (const fs::path& out : {sparse, packed}) {
        INFO(out);
        check_same_files(image, out, sector, out == packed);
        // The host file holds no byte of a cluster TSK calls free, and every byte it holds
        // is data qemu-img sees too (the file system's map is the one both read).
        const ByteSet free = tsk_free_bytes(out, sector, 4096);
        const ByteSet data = qemu_data(out, "raw");
        CHECK(boost::icl::length(free) > (8u << 20));
        CHECK(boost::icl::length(data & free) == 0);
        UniqueFd fd(::open(out.c_str(), O_RDONLY));
        CHECK(host_stored_ranges(fd.get(), fs::file_size(out)) == data);
    }

    // Sparsifying leaves the granules with a used cluster; packing empties some of those;
    // the output stores exactly its data's granules.
    CHECK(plain["packed"] == false);
    CHECK(plain["volumes"][0]["moves"]["planned"] == 0);
    CHECK(plain["granules"]["input"].get<std::uint64_t>() >=
          plain["granules"]["sparsified"].get<std::uint64_t>());
    CHECK(plain["granules"]["output"].get<std::uint64_t>() <=
          plain["granules"]["sparsified"].get<std::uint64_t>());
    CHECK(plain["volumes"][0]["verification"]["passed"] == true);

    CHECK(doc["packed"] == true);
    CHECK(doc["granule_bytes"] == 65536);
    const Json& volume = doc["volumes"][0];
    CHECK(volume["moves"]["planned"].get<std::uint64_t>() > 0);
    CHECK(volume["moves"]["done"] == volume["moves"]["planned"]);
    CHECK(doc["granules"]["packed"].get<std::uint64_t>() <
          doc["granules"]["sparsified"].get<std::uint64_t>());
    CHECK(doc["granules"]["output"].get<std::uint64_t>() <= doc["granules"]["packed"].get<std::uint64_t>());
    CHECK(granules_of(qemu_data(packed, "raw"), 65536) == doc["granules"]["output"].get<std::uint64_t>());
    CHECK(doc["host_bytes"]["output"].get<std::uint64_t>() < doc["host_bytes"]["input"].get<std::uint64_t>());
    CHECK(doc["data_bytes_output"].get<std::uint64_t>() == boost::icl::length(qemu_data(packed, "raw")));
}

TEST_CASE("compact's progress counts each step in one unit: all of a step's reports share its total",
          "[compact]") {
    // A front end prints "N of TOTAL <the step's unit>": a report of bytes of the disk under
    // the output hashing's "streams" read "17179869184 of 17179869184 streams".
    const fs::path image = compact_image();
    test::WorkDir dir("compact-meter");
    CompactOptions options;
    options.output = (dir / "out.raw").string();
    options.granule = 64 << 10;
    std::vector<CompactStep> steps;
    std::map<CompactStep, std::set<std::uint64_t>> totals;
    options.on_step = [&](CompactStep step) { steps.push_back(step); };
    Progress progress;
    progress.report = [&](std::uint64_t done, std::uint64_t total) {
        REQUIRE(!steps.empty());
        CHECK(done <= total);
        totals[steps.back()].insert(total);
    };
    const CompactResult result = compact_to_copy(image.string(), OpenOptions{}, options, progress);
    CHECK(steps == compact_steps(options));
    for (const auto& [step, seen] : totals) {
        INFO(step_info(step).name);
        CHECK(seen.size() == 1);
    }
    REQUIRE(totals.contains(CompactStep::HashOutput));
    CHECK(*totals[CompactStep::HashOutput].begin() != result.disk_bytes);
}

TEST_CASE("compact converts into qcow2, vmdk and vhdx that store exactly the granules predicted",
          "[compact][qemu]") {
    test::require_tools({"qemu-img", "icat", "fls", "mmls"});
    const fs::path image = compact_image();
    test::WorkDir dir("compact-containers");
    const fs::path raw = dir / "out.raw";
    (void)compact({"--granule", "64K"}, image, raw);
    for (const std::string format : {"qcow2", "vmdk", "vhdx"}) {
        INFO(format);
        const fs::path out = dir / ("out." + format);
        const Json doc = compact({"--output-format", format}, image, out);
        CHECK(doc["output_format"] == format);
        const std::uint64_t granule = doc["granule_bytes"].get<std::uint64_t>();
        CHECK(granule == (format == "vhdx" ? 1u << 20 : 1u << 16));
        // qemu's own view of the container: sound, the same disk as the raw output of the
        // same packing (vmdk and qcow2 pack at 64 KiB as the raw one did), data where
        // predicted.
        CHECK(test::run({"qemu-img", "check", "-f", format, out.string()}).status == 0);
        if (granule == (1u << 16))
            CHECK(test::run({"qemu-img", "compare", "-f", "raw", "-F", format, raw.string(), out.string()})
                      .status == 0);
        const std::uint64_t stored = doc["granules"]["output"].get<std::uint64_t>();
        if (format == "vhdx") {
            // qemu-img map calls every byte of a vhdx data (its driver has no block status):
            // the file itself shows the blocks, each 1 MiB, beside 1 MiB each of headers,
            // log, metadata and BAT regions.
            const std::uint64_t file = fs::file_size(out);
            CHECK(file >= stored * granule);
            CHECK(file <= (stored + 8) * granule);
        } else {
            CHECK(granules_of(qemu_data(out, format), granule) == stored);
        }
        CHECK(doc["granules"]["output"].get<std::uint64_t>() <=
              doc["granules"]["packed"].get<std::uint64_t>());
        CHECK(doc["host_bytes"]["output"].get<std::uint64_t>() <
              doc["host_bytes"]["input"].get<std::uint64_t>());
    }
}

TEST_CASE("compact refuses an output that exists or is the input, and granules a format cannot take",
          "[compact]") {
    const fs::path image = compact_image();
    test::WorkDir dir("compact-refusals");
    const fs::path taken = dir / "taken.raw";
    { std::ofstream(taken) << "x"; }
    const auto exists = test::run_cli({"compact", image.string(), "-o", taken.string()});
    CHECK(exists.status == 2);
    CHECK(exists.err.find("exists") != std::string::npos);
    CHECK(fs::file_size(taken) == 1);

    const auto input = test::run_cli({"compact", image.string(), "-o", image.string()});
    CHECK(input.status == 2);

    const auto grain = test::run_cli({"compact", image.string(), "-o", (dir / "g.vmdk").string(),
                                      "--output-format", "vmdk", "--granule", "1MiB"});
    CHECK(grain.status == 2);
    CHECK(grain.err.find("its grain is 64 KiB") != std::string::npos);
    CHECK(test::kind_of([] { check_granule(CompactFormat::Qcow2, 4u << 20); }) == ErrorKind::Unsupported);
    CHECK(test::kind_of([] { check_granule(CompactFormat::Raw, 3000); }) == ErrorKind::Unsupported);
    check_granule(CompactFormat::Vhdx, 32u << 20);
    // Nothing was left beside the outputs.
    std::size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
    CHECK(entries == 1);
}

TEST_CASE("sparsify punches exactly the discarded bytes and the zero blocks", "[compact]") {
    test::WorkDir dir("compact-sparsify");
    const fs::path path = dir / "f.raw";
    UniqueFd fd = new_file(path);
    REQUIRE(::ftruncate(fd.get(), 1 << 20) == 0);
    // Blocks 0-3 data, 4-5 zeros written, 6-7 data; then a hole; block 20 data.
    std::vector<char> block(4096, 'a');
    const std::vector<char> zeros(4096, 0);
    for (int b : {0, 1, 2, 3, 6, 7, 20}) REQUIRE(::pwrite(fd.get(), block.data(), 4096, b * 4096) == 4096);
    for (int b : {4, 5}) REQUIRE(::pwrite(fd.get(), zeros.data(), 4096, b * 4096) == 4096);
    REQUIRE(can_punch_holes(fd.get()));
    // Discard block 1 and half of block 3 (which then keeps its other half).
    ByteSet discard(ByteSet::interval_type::right_open(4096, 8192));
    discard += ByteSet::interval_type::right_open(3 * 4096 + 2048, 4 * 4096);
    Discards discards(fd.get(), path.string(), 1 << 20, true);
    discards.stored(discard);
    const ByteSet kept = discards.zero_blocks(ByteSet(ByteSet::interval_type::right_open(0, 1 << 20)), 4096);
    // Nothing is freed before finish().
    ByteSet written(ByteSet::interval_type::right_open(0, 8 * 4096));
    written += ByteSet::interval_type::right_open(20 * 4096, 21 * 4096);
    CHECK(host_stored_ranges(fd.get(), 1 << 20) == written);
    discards.finish();
    ByteSet want(ByteSet::interval_type::right_open(0, 4096));
    want += ByteSet::interval_type::right_open(2 * 4096, 4 * 4096);
    want += ByteSet::interval_type::right_open(6 * 4096, 8 * 4096);
    want += ByteSet::interval_type::right_open(20 * 4096, 21 * 4096);
    CHECK(kept == want);
    CHECK(host_stored_ranges(fd.get(), 1 << 20) == want);
    char byte = 0;
    REQUIRE(::pread(fd.get(), &byte, 1, 3 * 4096 + 3000) == 1);
    CHECK(byte == 0);
    REQUIRE(::pread(fd.get(), &byte, 1, 3 * 4096 + 1000) == 1);
    CHECK(byte == 'a');
}

TEST_CASE(
    "the stored ranges within a set are those the host stores there, holes and intervals past it left out",
    "[compact]") {
    test::WorkDir dir("compact-stored-within");
    const fs::path path = dir / "f.raw";
    UniqueFd fd = new_file(path);
    constexpr std::uint64_t kBlock = 4096;
    constexpr std::uint64_t kSize = 40 * kBlock;
    REQUIRE(::ftruncate(fd.get(), kSize) == 0);
    REQUIRE(can_punch_holes(fd.get()));  // so that the host reports holes block by block
    const std::vector<char> data(kBlock, 'd');
    for (int b : {0, 1, 5, 9, 10, 11, 30})
        REQUIRE(::pwrite(fd.get(), data.data(), kBlock, b * kBlock) == static_cast<ssize_t>(kBlock));
    const auto blocks = [](std::initializer_list<std::pair<std::uint64_t, std::uint64_t>> ranges) {
        ByteSet set;
        for (const auto& [from, to] : ranges)
            set += ByteSet::interval_type::right_open(from * kBlock, to * kBlock);
        return set;
    };
    const ByteSet all = blocks({{0, 2}, {5, 6}, {9, 12}, {30, 31}});
    CHECK(host_stored_ranges(fd.get(), kSize) == all);
    CHECK(host_stored_ranges(fd.get(), kSize, blocks({{0, 40}})) == all);
    CHECK(host_stored_ranges(fd.get(), kSize, blocks({{2, 4}})).empty());  // a hole
    CHECK(host_stored_ranges(fd.get(), kSize, blocks({{1, 6}})) == blocks({{1, 2}, {5, 6}}));
    // Two intervals in holes, one running from a stored range into the hole after it, one
    // beginning in a hole before a stored range.
    CHECK(host_stored_ranges(fd.get(), kSize, blocks({{2, 4}, {6, 7}, {10, 13}, {29, 31}})) ==
          blocks({{10, 12}, {30, 31}}));
    // Part of a block; past the file's size (clipped); after the last stored byte.
    ByteSet partial(ByteSet::interval_type::right_open(5 * kBlock + 100, 5 * kBlock + 200));
    CHECK(host_stored_ranges(fd.get(), kSize, partial) == partial);
    CHECK(host_stored_ranges(fd.get(), kSize, blocks({{30, 50}})) == blocks({{30, 31}}));
    CHECK(host_stored_ranges(fd.get(), kSize, blocks({{31, 40}})).empty());
    CHECK(host_stored_ranges(fd.get(), kSize, ByteSet()).empty());
}

TEST_CASE("the copy writes only the blocks with data, and the raw file records every later write", "[compact]") {
    // A 1 MiB + 6 KiB disk: 4 KiB blocks 0 and 2 data, block 1 zeros, block 3 data only in
    // its last byte, block 4 outside `only`, then data across the 1 MiB boundary and a
    // 2 KiB tail block with data.
    constexpr std::size_t kSize = (1 << 20) + 6144;
    auto bytes = std::make_shared<std::vector<std::byte>>(kSize);
    auto& b = *bytes;
    std::fill(b.begin(), b.begin() + 4096, std::byte{1});
    std::fill(b.begin() + 8192, b.begin() + 12288, std::byte{2});
    b[16383] = std::byte{3};
    std::fill(b.begin() + 16384, b.begin() + 20480, std::byte{4});
    std::fill(b.begin() + (1 << 20) - 100, b.begin() + (1 << 20) + 100, std::byte{5});
    b[kSize - 1] = std::byte{6};
    const RawImage image(std::make_shared<MemorySource>("mem", bytes));
    test::WorkDir dir("compact-copy");
    const fs::path path = dir / "out.raw";
    UniqueFd fd = new_file(path);
    REQUIRE(can_punch_holes(fd.get()));
    ByteSet only(ByteSet::interval_type::right_open(0, kSize));
    only -= ByteSet::interval_type::right_open(16384, 20480);
    const SparseCopy copy = copy_disk_sparse(image, fd.get(), {}, nullptr, {&only, 4096, {}});
    ByteSet want(ByteSet::interval_type::right_open(0, 4096));
    want += ByteSet::interval_type::right_open(8192, 16384);
    want += ByteSet::interval_type::right_open((1 << 20) - 4096, (1 << 20) + 4096);
    want += ByteSet::interval_type::right_open((1 << 20) + 4096, kSize);
    CHECK(copy.blocks == want);
    // The data blocks are written whole: block 3 from its first byte (its zeros included).
    CHECK(copy.bytes_written == 4096 + 8192 + 8192 + 2048);
    CHECK(host_stored_ranges(fd.get(), kSize) == want);
    std::vector<std::byte> back(kSize);
    REQUIRE(::pread(fd.get(), back.data(), kSize, 0) == static_cast<ssize_t>(kSize));
    std::fill(b.begin() + 16384, b.begin() + 20480, std::byte{0});  // left out: a hole
    CHECK(back == b);
    CHECK(test::kind_of([&] {
              (void)copy_disk_sparse(image, fd.get(), {}, nullptr, {&only, 3000, {}});
          }) == ErrorKind::Internal);

    WritableRawFile file(fd.get(), path.string(), /*record_writes=*/true);
    const std::vector<std::byte> some(100, std::byte{7});
    file.write(5000, some);
    file.write(5100, some);
    file.write(70000, {});
    file.write(90000, some);
    ByteSet written(ByteSet::interval_type::right_open(5000, 5200));
    written += ByteSet::interval_type::right_open(90000, 90100);
    CHECK(file.written() == written);
    WritableRawFile plain(fd.get(), path.string());
    plain.write(5000, some);
    CHECK(plain.written().empty());
}

TEST_CASE("the copy takes a relocated piece after an unaligned pending one, with 128 KiB zero blocks",
          "[compact]") {
    // apply's copy: 128 KiB zero blocks, and pieces where the bytes already pending end past
    // the block's middle, so the room left in the buffer ends before the next block boundary.
    constexpr std::uint64_t kSize = 3 << 20;
    constexpr std::uint64_t kKiB = 1024;
    const auto bytes = patterned(kSize, 253);
    const RawImage image(std::make_shared<MemorySource>("mem", bytes));
    test::WorkDir dir("compact-relocate-unaligned");
    UniqueFd fd = new_file(dir / "out.raw");
    const ByteSet only(ByteSet::interval_type::right_open(900 * kKiB, 1100 * kKiB));
    const std::vector<Relocation> relocated{{1100 * kKiB, 2 * kKiB + 7, 1 << 20}};
    const SparseCopy copy =
        copy_disk_sparse(image, fd.get(), {}, nullptr, {.only = &only, .relocated = relocated});
    CHECK(copy.bytes_written == 200 * kKiB + (1 << 20));
    std::vector<std::byte> expected(kSize);
    std::copy_n(bytes->begin() + 900 * kKiB, 200 * kKiB, expected.begin() + 900 * kKiB);
    std::copy_n(bytes->begin() + 2 * kKiB + 7, 1 << 20, expected.begin() + 1100 * kKiB);
    std::vector<std::byte> back(kSize);
    REQUIRE(::pread(fd.get(), back.data(), kSize, 0) == static_cast<ssize_t>(kSize));
    CHECK(back == expected);
}

TEST_CASE("the copy reads relocated pieces whose sources lie close together in one read", "[compact]") {
    // Forty 4 KiB pieces written one after the other, their sources 4 KiB apart (a window of
    // 128 KiB serves sixteen of them), then ten whose sources lie a MiB apart, backwards.
    constexpr std::uint64_t kSize = 16 << 20;
    std::vector<std::byte> bytes(kSize);
    for (std::uint64_t i = 0; i < kSize; ++i) bytes[i] = static_cast<std::byte>(i % 249 + 1);
    std::vector<Relocation> relocated;
    for (std::uint64_t i = 0; i < 40; ++i)
        relocated.push_back({(1 << 20) + i * 4096, (2 << 20) + i * 8192, 4096});
    for (std::uint64_t i = 0; i < 10; ++i)
        relocated.push_back({(1 << 20) + (40 + i) * 4096, (15 - i) * (1 << 20) + 512, 4096});
    const test::MemoryImage image(bytes);
    test::WorkDir dir("compact-relocate-window");
    UniqueFd fd = new_file(dir / "out.raw");
    const ByteSet none;
    const SparseCopy copy =
        copy_disk_sparse(image, fd.get(), {}, nullptr, {.only = &none, .relocated = relocated});
    CHECK(copy.bytes_written == 50 * 4096);
    CHECK(image.reads() == 3 + 10);
    std::vector<std::byte> expected(kSize);
    for (const Relocation& r : relocated)
        std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(r.from), r.length,
                    expected.begin() + static_cast<std::ptrdiff_t>(r.to));
    std::vector<std::byte> back(kSize);
    REQUIRE(::pread(fd.get(), back.data(), kSize, 0) == static_cast<ssize_t>(kSize));
    CHECK(back == expected);
}

TEST_CASE("the copy writes relocated bytes in disk order among the rest, their zero blocks left holes",
          "[compact]") {
    constexpr std::uint64_t kSize = 3 << 20;
    const auto bytes = patterned(kSize, 251);
    auto& b = *bytes;
    std::fill(b.begin() + 12288, b.begin() + 16384, std::byte{0});  // a zero block among data
    const RawImage image(std::make_shared<MemorySource>("mem", bytes));
    test::WorkDir dir("compact-relocate");
    const fs::path path = dir / "out.raw";
    UniqueFd fd = new_file(path);
    const ByteSet only(ByteSet::interval_type::right_open(0, 8192));
    // Two pieces: 8 KiB of data, half of them zero, into the block after `only`; 12 KiB
    // across the 1 MiB boundary from the disk's last MiB.
    const std::vector<Relocation> relocated{{8192, 8192, 8192}, {(1 << 20) - 4096, (2 << 20) + 100, 12288}};
    const SparseCopy copy = copy_disk_sparse(image, fd.get(), {}, nullptr, {&only, 4096, relocated});
    ByteSet want(ByteSet::interval_type::right_open(0, 12288));
    want += ByteSet::interval_type::right_open((1 << 20) - 4096, (1 << 20) + 8192);
    CHECK(copy.blocks == want);
    CHECK(copy.bytes_written == 12288 + 12288);
    CHECK(host_stored_ranges(fd.get(), kSize) == want);
    std::vector<std::byte> expected(kSize);
    std::copy_n(b.begin(), 16384, expected.begin());
    std::copy_n(b.begin() + (2 << 20) + 100, 12288, expected.begin() + (1 << 20) - 4096);
    std::vector<std::byte> back(kSize);
    REQUIRE(::pread(fd.get(), back.data(), kSize, 0) == static_cast<ssize_t>(kSize));
    CHECK(back == expected);

    // The deferred bytes read from the image, around and across the file's, until written.
    WritableRawFile file(fd.get(), path.string(), /*record_writes=*/true);
    ByteSet deferred(ByteSet::interval_type::right_open(4096, 6000));
    deferred += ByteSet::interval_type::right_open(20000, 30000);
    DeferredCopyDisk disk(file, image, deferred);
    std::vector<std::byte> seen(32768);
    disk.read(0, seen);
    std::copy_n(b.begin() + 4096, 6000 - 4096, expected.begin() + 4096);
    std::copy_n(b.begin() + 20000, 30000 - 20000, expected.begin() + 20000);
    CHECK(std::equal(seen.begin(), seen.end(), expected.begin()));
    const std::vector<std::byte> sevens(1000, std::byte{7});
    disk.write(25000, sevens);
    deferred -= ByteSet::interval_type::right_open(25000, 26000);
    CHECK(disk.deferred() == deferred);
    disk.read(24000, std::span(seen).first(3000));
    CHECK(std::equal(seen.begin(), seen.begin() + 1000, b.begin() + 24000));
    CHECK(std::equal(seen.begin() + 1000, seen.begin() + 2000, sevens.begin()));
    CHECK(std::equal(seen.begin() + 2000, seen.begin() + 3000, b.begin() + 26000));
    // copy() fetches only the deferred bytes asked for, each asked of the limiter first, and
    // they are deferred no more.
    RateLimiter limiter(0);
    CHECK(disk.copy(ByteSet(ByteSet::interval_type::right_open(5000, 26000)), &limiter) == 1000 + 5000);
    CHECK(limiter.requested() == 1000 + 5000);
    deferred -= ByteSet::interval_type::right_open(5000, 26000);
    CHECK(disk.deferred() == deferred);
    REQUIRE(::pread(fd.get(), back.data(), 32768, 0) == 32768);
    CHECK(std::equal(back.begin() + 5000, back.begin() + 6000, b.begin() + 5000));
    CHECK(std::equal(back.begin() + 20000, back.begin() + 25000, b.begin() + 20000));
    CHECK(back[27000] == std::byte{0});  // still deferred: the file holds a hole there

    // A piece written ahead is found in place while neither it nor its source has changed,
    // and is then taken as written.
    const std::uint64_t to = (1 << 20) - 4096;
    const std::uint64_t from = (2 << 20) + 100;
    ByteSet later(ByteSet::interval_type::right_open(to, to + 12288));  // vacated, then moved into
    later += ByteSet::interval_type::right_open(2 << 20, 3 << 20);
    DeferredCopyDisk moves(file, image, later, relocated);
    CHECK(moves.copied_ahead(to, from, 0));
    CHECK_FALSE(moves.copied_ahead(to, from + 1, 4096));  // not its source
    CHECK_FALSE(moves.copied_ahead(to, from, 12289));     // past the piece
    CHECK_FALSE(moves.copied_ahead(4096, 4096, 4096));    // no piece there
    const std::vector<std::byte> page(4096, std::byte{9});
    moves.write(from + 8192, page);  // a source changed
    CHECK_FALSE(moves.copied_ahead(to + 8192, from + 8192, 4096));
    moves.write(to + 4096, page);  // a destination changed
    CHECK_FALSE(moves.copied_ahead(to, from, 8192));
    CHECK(moves.copied_ahead(to, from, 4096));
    later -= ByteSet::interval_type::right_open(to, to + 8192);
    later -= ByteSet::interval_type::right_open(from + 8192, from + 12288);
    CHECK(moves.deferred() == later);
    CHECK_FALSE(moves.copied_ahead(to, from, 4096));  // taken once
    disk.read(to, std::span(seen).first(4096));       // the file's bytes there now
    CHECK(std::equal(seen.begin(), seen.begin() + 4096, b.begin() + from));
}

TEST_CASE("the moves beside a copy read what it will write from the image, and it leaves what they wrote",
          "[compact][apply]") {
    constexpr std::uint64_t kSize = 1 << 20;
    const auto bytes = patterned(kSize, 253);
    const auto& b = *bytes;
    const RawImage image(std::make_shared<MemorySource>("mem", bytes));
    test::WorkDir dir("compact-beside");
    const fs::path path = dir / "out.raw";
    UniqueFd fd = new_file(path);
    // The copy writes [0, 64 KiB) in place and a piece at 96 KiB from 512 KiB; the moves'
    // source at 200 KiB is deferred; [160, 192) KiB is free, written by neither.
    const ByteSet keep(ByteSet::interval_type::right_open(0, 65536));
    const std::vector<Relocation> piece{{98304, 524288, 16384}};
    CopyFrontier frontier(fd.get(), kSize);
    CHECK(static_cast<std::uint64_t>(fs::file_size(path)) == kSize);  // readable before the copy begins
    WritableRawFile file(fd.get(), path.string());
    DeferredCopyDisk disk(file, image, ByteSet(ByteSet::interval_type::right_open(204800, 208896)), piece,
                          {&frontier, &keep});
    std::vector<std::byte> seen(4096);
    const auto read_at = [&](std::uint64_t at) {
        disk.read(at, seen);
        return seen;
    };
    const auto input = [&](std::uint64_t at) {
        return std::vector<std::byte>(b.begin() + at, b.begin() + at + 4096);
    };
    const std::vector<std::byte> zeros(4096);
    // Before the copy: what it will write, the image's bytes (the piece's from its source).
    CHECK(read_at(8192) == input(8192));
    CHECK(read_at(98304 + 4096) == input(524288 + 4096));
    CHECK(read_at(163840) == zeros);          // free: the file's hole
    CHECK(read_at(204800) == input(204800));  // deferred
    // The copy has come by [0, 4 KiB) (with other bytes, to tell the file from the image).
    const std::vector<std::byte> sixes(4096, std::byte{6});
    frontier.write(fd.get(), sixes, 0);
    CHECK(frontier.reached() == 4096);
    disk.read(2048, seen);  // across the frontier
    CHECK(std::equal(seen.begin(), seen.begin() + 2048, sixes.begin()));
    CHECK(std::equal(seen.begin() + 2048, seen.end(), b.begin() + 4096));
    // The moves write where the copy has not come: it leaves those bytes, and they read back.
    const std::vector<std::byte> nines(1000, std::byte{9});
    disk.write(20000, nines);
    disk.write(98304 + 100, nines);
    disk.write(170000, nines);  // free space: nothing taken
    CHECK(frontier.taken() == ByteSet(ByteSet::interval_type::right_open(20000, 21000)) +
                                  ByteSet::interval_type::right_open(98404, 99404));
    disk.read(16384, seen);
    CHECK(std::equal(seen.begin() + 3616, seen.begin() + 4096, nines.begin()));
    CHECK(std::equal(seen.begin(), seen.begin() + 3616, b.begin() + 16384));
    // The copy runs to the end through the frontier and leaves the moves' bytes.
    const SparseCopy copy = copy_disk_sparse(image, fd.get(), {}, nullptr,
                                             {.only = &keep, .relocated = piece, .frontier = &frontier});
    CHECK(copy.bytes_written == 65536 + 16384);  // as if the moves wrote after it
    CHECK(frontier.reached() == kSize);
    std::vector<std::byte> back(kSize);
    REQUIRE(::pread(fd.get(), back.data(), kSize, 0) == static_cast<ssize_t>(kSize));
    std::vector<std::byte> expected(kSize);
    std::copy_n(b.begin(), 65536, expected.begin());
    std::copy_n(b.begin() + 524288, 16384, expected.begin() + 98304);
    std::copy(nines.begin(), nines.end(), expected.begin() + 20000);
    std::copy(nines.begin(), nines.end(), expected.begin() + 98404);
    std::copy(nines.begin(), nines.end(), expected.begin() + 170000);
    CHECK(back == expected);
    CHECK(read_at(98304) ==
          std::vector<std::byte>(expected.begin() + 98304, expected.begin() + 98304 + 4096));
}

TEST_CASE("compact's packing, carried out at once, is the shrink plan without its summary or identity",
          "[compact]") {
    const fs::path input = compact_image();
    const OpenedImage opened = open_and_analyze(input.string());
    PlanOptions shown;
    shown.strategy = Strategy::Shrink;
    shown.granule = 1 << 20;
    shown.split_streams = true;
    PlanOptions at_once = shown;
    at_once.carried_out_at_once = true;
    const PlannedVolume saved = plan_volume(opened, 0, shown, {});
    const PlannedVolume packing = plan_volume(opened, 0, at_once, {});
    REQUIRE(saved.plan.moves.size() > 10);
    CHECK(packing.plan.moves == saved.plan.moves);
    CHECK(packing.plan.notes == saved.plan.notes);
    CHECK(free_bytes_on_disk(*packing.after) == free_bytes_on_disk(*saved.after));
    CHECK(saved.plan.summary.moves == saved.plan.moves.size());
    CHECK(saved.plan.identity.allocation_digest != 0);
    CHECK(packing.plan.summary == PlanSummary{});
    CHECK(packing.plan.identity == PlanIdentity{});
}

TEST_CASE(
    "compact's moves find the destinations written ahead, read what they vacate from the input, and a "
    "skipped move's source is fetched",
    "[compact]") {
    const fs::path input = compact_image();
    const OpenedImage opened = open_and_analyze(input.string());
    const VolumeMap& map = opened.analysis->volumes.front().map;
    PlanOptions packing;
    packing.strategy = Strategy::Shrink;
    packing.granule = 1 << 20;
    packing.split_streams = true;
    const PlannedVolume planned = plan_volume(opened, 0, packing, {});
    REQUIRE(planned.plan.moves.size() > 10);
    const ByteSet free_before = free_bytes_on_disk(map);
    const ByteSet vacated = free_bytes_on_disk(*planned.after) - free_before;
    const ByteSet moved_out = moved_bytes(map, planned.plan, &Move::from_lcn) - free_before;
    REQUIRE(boost::icl::contains(moved_out, vacated));
    REQUIRE(moved_out != vacated);  // some sources are filled again
    const std::uint64_t size = opened.image->size();
    const ByteSet keep = ByteSet(ByteSet::interval_type::right_open(0, size)) - free_before - moved_out;

    // What no plan moves ($MFT among it) is none of the moves' sources or destinations.
    const ByteSet pinned_clusters = pinned_bytes(map);
    CHECK(boost::icl::contains(pinned_clusters, mft_bytes(map)));
    CHECK_FALSE(boost::icl::intersects(pinned_clusters, moved_bytes(map, planned.plan, &Move::from_lcn)));
    CHECK_FALSE(boost::icl::intersects(pinned_clusters, moved_bytes(map, planned.plan, &Move::to_lcn)));
    const auto [sector, sectors] = test::mmls_partitions(input).at(0);
    const VolumeWindow window{sector * 512, sectors * 512};

    // As compact copies: neither the free clusters nor those the moves take data out of;
    // first what no plan moves and what lies outside the volume, then the rest with the
    // destinations written ahead.
    test::WorkDir dir("compact-deferred");
    const fs::path out = dir / "out.raw";
    UniqueFd fd = new_file(out);
    const ByteSet pinned =
        (ByteSet(ByteSet::interval_type::right_open(0, size)) -
         ByteSet::interval_type::right_open(window.offset, window.offset + window.length)) +
        pinned_clusters;
    (void)copy_disk_sparse(*opened.image, fd.get(), {}, nullptr, {&pinned, 4096, {}, nullptr});
    const std::vector<Relocation> ahead = moves_to_copy_ahead(map, planned.plan, keep, free_before);
    const ByteSet rest = keep - pinned;
    (void)copy_disk_sparse(*opened.image, fd.get(), {}, nullptr, {&rest, 4096, ahead, nullptr});
    REQUIRE(ahead.size() > 10);
    WritableRawFile file(fd.get(), out.string(), /*record_writes=*/true);
    DeferredCopyDisk output(file, *opened.image, moved_out, ahead);

    // A move whose source the plan leaves free is left out, as if skipped: its source stays
    // in use and must not stay a hole.
    const auto source_of = [&map](const Move& m) {
        const std::uint64_t at =
            map.partition_offset + static_cast<std::uint64_t>(m.from_lcn) * map.cluster_size;
        return ByteSet::interval_type::right_open(
            at, at + static_cast<std::uint64_t>(m.clusters) * map.cluster_size);
    };
    Plan rest_of_plan = planned.plan;
    const auto left_out = std::ranges::find_if(
        rest_of_plan.moves, [&](const Move& m) { return boost::icl::contains(vacated, source_of(m)); });
    REQUIRE(left_out != rest_of_plan.moves.end());
    const auto source_bytes = source_of(*left_out);
    rest_of_plan.moves.erase(left_out);
    const MoveOutcome outcome = carry_out_moves(output, window, map, rest_of_plan);
    CHECK(outcome.done.size() > 10);
    // Almost every move found its bytes in place and wrote nothing there; the few others
    // found a destination or source changed by an earlier write and copied as before.
    const auto rewritten = std::ranges::count_if(ahead, [&](const Relocation& r) {
        return boost::icl::intersects(file.written(),
                                      ByteSet::interval_type::right_open(r.to, r.to + r.length));
    });
    CHECK(static_cast<std::size_t>(rewritten) * 50 < ahead.size());

    const ByteSet in_use = bytes_in_use(output, window, output.deferred());
    CHECK(boost::icl::contains(in_use, source_bytes));
    CHECK(output.copy(in_use) == boost::icl::length(in_use));
    CHECK_FALSE(boost::icl::intersects(output.deferred(), in_use));
    fd.reset();
    check_same_files(input, out, sector, /*moved=*/true);
}

TEST_CASE("what no plan moves: the bytes of the streams NTFS pins or a plan leaves alone", "[compact]") {
    VolumeMap map = test::empty_volume(256);
    map.partition_offset = 1 << 20;
    map.streams.push_back(
        test::stream(0, {{0, 10, 4}, {4, Extent::kSparse, 2}, {6, 100, 2}}, Placement::Unmovable));
    map.streams.push_back(test::stream(40, {{0, 20, 3}}));
    map.streams.push_back(test::stream(41, {{0, 50, 1}}, Placement::Excluded));
    const auto bytes = [](std::uint64_t lcn, std::uint64_t clusters) {
        return ByteSet::interval_type::right_open((1 << 20) + lcn * 4096,
                                                  (1 << 20) + (lcn + clusters) * 4096);
    };
    CHECK(pinned_bytes(map) == ByteSet(bytes(10, 4)) + bytes(50, 1) + bytes(100, 2));
    CHECK(mft_bytes(map) == ByteSet(bytes(10, 4)) + bytes(100, 2));
}

TEST_CASE("the moves' bytes at either end, and the destinations a copy writes ahead, computed by hand",
          "[compact]") {
    VolumeMap map = test::empty_volume(256);
    map.partition_offset = 1 << 20;
    const auto bytes = [](std::uint64_t lcn, std::uint64_t clusters) {
        return ByteSet::interval_type::right_open((1 << 20) + lcn * 4096,
                                                  (1 << 20) + (lcn + clusters) * 4096);
    };
    const auto at = [](std::uint64_t lcn) { return (std::uint64_t{1} << 20) + lcn * 4096; };
    Plan plan;
    // Out of order at both ends. Sources: 31-32 lie within 30-35 (a stream moved twice),
    // 40-41 and 42 touch, 60 and 10 stand alone.
    plan.moves = {{70, "$DATA", 0, 40, 200, 2}, {71, "$DATA", 0, 60, 150, 1}, {72, "$DATA", 0, 30, 100, 6},
                  {73, "$DATA", 0, 42, 202, 1}, {74, "$DATA", 0, 31, 110, 2}, {75, "$DATA", 0, 10, 220, 1}};
    CHECK(moved_bytes(map, plan, &Move::from_lcn) ==
          ByteSet(bytes(10, 1)) + bytes(30, 6) + bytes(40, 3) + bytes(60, 1));
    CHECK(moved_bytes(map, plan, &Move::to_lcn) ==
          ByteSet(bytes(100, 6)) + bytes(110, 2) + bytes(150, 1) + bytes(200, 3) + bytes(220, 1));
    CHECK(moved_bytes(map, Plan{}, &Move::to_lcn).empty());

    // Kept in place: cluster 203, touching the destination at 202 but not in it, and 220,
    // the last move's destination. Free before the moves: cluster 60, the second move's source.
    const ByteSet keep = ByteSet(bytes(203, 1)) + bytes(220, 1);
    const ByteSet free = ByteSet(bytes(60, 1));
    const std::vector<Relocation> ahead = moves_to_copy_ahead(map, plan, keep, free);
    const auto key = [](const Relocation& r) { return std::tuple(r.to, r.from, r.length); };
    std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> got;
    std::ranges::transform(ahead, std::back_inserter(got), key);
    CHECK(got ==
          std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>{{at(100), at(30), 6 * 4096},
                                                                               {at(110), at(31), 2 * 4096},
                                                                               {at(200), at(40), 2 * 4096},
                                                                               {at(202), at(42), 1 * 4096}});
}

TEST_CASE(
    "the prediction adopts an attribute list libntfs-3g grew for a longer runlist, only on free clusters",
    "[compact][apply]") {
    // File 70 moved in parts: its runlist no longer fits its record, so libntfs-3g gave it
    // a non-resident $ATTRIBUTE_LIST in cluster 9, which the plan left free.
    VolumeMap predicted = test::empty_volume(16);
    predicted.free.add(test::r(8, 16));
    predicted.streams.push_back(test::stream(70, {{0, 0, 2}, {2, 4, 2}}));
    VolumeMap actual = predicted;
    Stream list = test::stream(70, {{0, 9, 1}});
    list.type = static_cast<std::uint32_t>(AttrType::AttributeList);
    actual.streams.insert(actual.streams.begin(), list);
    actual.free.subtract(test::r(9, 10));

    // As the proofs hold a prediction: reduced (expect_volume) with `moved` the files moved.
    const auto expect = [](const VolumeMap& map, std::vector<std::uint64_t> moved) {
        return expect_volume(map, Plan{}, std::move(moved));
    };
    const AttributeListChanges changes = attribute_list_changes(expect(predicted, {70}), actual);
    CHECK(changes.taken == 1);
    CHECK(changes.freed == 0);
    CHECK(changes.added == ClusterSet(test::r(9, 10)));
    CHECK(changes.records == std::set<std::uint64_t>{70});
    CHECK_FALSE(allocation_difference(expect(predicted, {70}), actual, changes));
    CHECK(*allocation_difference(expect(predicted, {70}), actual) ==
          "free space differs: LCN 9-9 is used but should be free");
    // Not for a file that did not move, nor on clusters the plan had given to something.
    const AttributeListChanges other = attribute_list_changes(expect(predicted, {71}), actual);
    CHECK(other.taken == 0);
    CHECK(other.records.empty());
    CHECK(allocation_difference(expect(predicted, {71}), actual, other));
    VolumeMap taken = predicted;
    taken.free.subtract(test::r(9, 10));
    CHECK(attribute_list_changes(expect(taken, {70}), actual).taken == 0);
    CHECK(*allocation_difference(expect(taken, {70}), actual) == "record 70 $ATTRIBUTE_LIST was not there before");
    // And the shrink the other way round: the list goes, its cluster is free again.
    const AttributeListChanges back = attribute_list_changes(expect(actual, {70}), predicted);
    CHECK(back.freed == 1);
    CHECK_FALSE(allocation_difference(expect(actual, {70}), predicted, back));
}

TEST_CASE("the proofs' prediction: the plan replayed, each stream's runs as a digest, the moved files' lists whole",
          "[compact][apply]") {
    // Files 70 (two runs, and an attribute list in cluster 12) and 71 (one run); the plan
    // joins 70's runs in clusters 8-11.
    VolumeMap before = test::empty_volume(16);
    before.free.add(test::r(6, 12));
    before.free.add(test::r(13, 16));
    before.streams.push_back(test::stream(70, {{0, 0, 2}, {2, 4, 2}}));
    Stream list = test::stream(70, {{0, 12, 1}});
    list.type = static_cast<std::uint32_t>(AttrType::AttributeList);
    before.streams.insert(before.streams.begin(), list);
    before.streams.push_back(test::stream(71, {{0, 2, 2}}));
    Plan plan;
    plan.moves = {{70, "$DATA", 0, 0, 8, 2}, {70, "$DATA", 2, 4, 10, 2}};
    const VolumeMap after = apply_plan(before, plan);

    const ExpectedVolume expected = expect_volume(before, plan, {70}, {std::nullopt, 0x1234, 0x5678});
    REQUIRE(expected.streams.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(expected.streams[i].record == after.streams[i].mft_record);
        CHECK(expected.streams[i].type == after.streams[i].type);
        CHECK(expected.streams[i].runs == runs_digest(after.streams[i].extents));
    }
    CHECK_FALSE(expected.streams[0].hashed);
    CHECK(expected.streams[1].contents == 0x1234);
    CHECK(expected.streams[2].contents == 0x5678);
    CHECK(expected.free == after.free);
    CHECK(expected.fragments_before == 4);    // 1 + 2 + 1
    CHECK(expected.fragments_expected == 3);  // 70's $DATA in one run
    REQUIRE(expected.lists.size() == 1);
    CHECK(expected.lists.front().extents == list.extents);
    CHECK(expected.input_mft.streams.empty());  // no $MFT in this hand-made map
    // The runs are compared merged: a reader may split them otherwise.
    CHECK(runs_digest(std::vector<Extent>{{0, 8, 4}}) == runs_digest(std::vector<Extent>{{0, 8, 1}, {1, 9, 3}}));
    CHECK(runs_digest(std::vector<Extent>{{0, 8, 4}}) != runs_digest(std::vector<Extent>{{0, 9, 4}}));

    CHECK_FALSE(allocation_difference(expected, after));
    VolumeMap elsewhere = after;
    elsewhere.streams[1].extents = {{0, 8, 2}, {2, 13, 2}};
    elsewhere.free = ClusterSet(test::r(0, 2)) + test::r(4, 8) + test::r(10, 12) + test::r(15, 16);
    CHECK(*allocation_difference(expected, elsewhere) == "free space differs: LCN 13-14 is used but should be free");
    elsewhere.free = after.free;
    CHECK(*allocation_difference(expected, elsewhere) ==
          "record 70 $DATA has runs 0:8+2 2:13+2, not those the plan predicted");
    VolumeMap without = after;
    without.streams.pop_back();
    without.free.add(test::r(2, 4));
    CHECK(*allocation_difference(expected, without) == "free space differs: LCN 2-3 is free but should be used");
    without.free = after.free;
    CHECK(*allocation_difference(expected, without) == "record 71 $DATA is missing");

    // Contents: the input's digests against the output's; a stream the output's pass
    // skipped (nullopt: it records the moves) is proved otherwise.
    CHECK_FALSE(digest_difference(expected, after, {std::nullopt, 0x1234, 0x5678}));
    CHECK_FALSE(digest_difference(expected, after, {0x9999, std::nullopt, 0x5678}));
    CHECK(*digest_difference(expected, after, {std::nullopt, 0x1234, 0x5679}) == "record 71 $DATA");
    CHECK(*digest_difference(expected, without, {std::nullopt, 0x1234}) == "record 71 $DATA");
    // File 70 moved: its list, hashed on the input, may be rewritten or gone in the output
    // (a runlist that fits the base record again needs no list).
    const ExpectedVolume listed = expect_volume(before, plan, {70}, {0x4444, 0x1234, 0x5678});
    VolumeMap no_list = after;
    no_list.streams.erase(no_list.streams.begin());
    CHECK_FALSE(digest_difference(listed, no_list, {0x1234, 0x5678}));
    CHECK_FALSE(digest_difference(listed, after, {0x4445, 0x1234, 0x5678}));
    CHECK(*digest_difference(expect_volume(before, plan, {}, {0x4444, 0x1234, 0x5678}), no_list,
                             {0x1234, 0x5678}) == "record 70 $ATTRIBUTE_LIST");
    // A plan that does not replay is refused as apply_plan refuses it.
    Plan wrong;
    wrong.moves = {{70, "$DATA", 0, 0, 12, 1}};
    CHECK(test::kind_of([&] { (void)expect_volume(before, wrong, {70}); }) == ErrorKind::Corrupt);
}

TEST_CASE("compact: SIGINT during the copy exits 130 and leaves nothing beside the output", "[compact]") {
    const fs::path image = compact_image();
    test::WorkDir dir("compact-sigint");
    const fs::path out = dir / "out.qcow2";
    const fs::path err = dir / "err.txt";
    // 1 MiB/s: the copy of some 30 MiB is still at work when the signal comes.
    const pid_t pid = test::start_cli_until_begun(
        {"compact", image.string(), "-o", out.string(), "--output-format", "qcow2", "--rate", "1MiB/s"}, out,
        err);
    int status = 0;
    REQUIRE(::kill(pid, SIGINT) == 0);
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    const std::string message = test::file_contents(err);
    INFO(message);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 130);
    CHECK(message.find("interrupted: no output was written") != std::string::npos);
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(dir.path()))
        left.push_back(entry.path().filename().string());
    CHECK(left == std::vector<std::string>{"err.txt"});
}
