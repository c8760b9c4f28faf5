// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the NTFS scan. The input describes a bare 6 MiB NTFS volume (no
// partition table) sector by sector: records of a 2-byte little-endian sector number
// (modulo the volume's 12288 sectors) followed by that sector's 512 bytes; sectors no
// record gives are zero, a later record wins. Sparse on purpose: a volume is mostly zeros
// and free space, and mutations of a raw 6 MiB input would almost never reach metadata.
// The volume is served from memory through a MemorySource under a RawImage, mounted by
// libntfs-3g over the ntfs::Device adapter and scanned as `analyze` scans it. A volume
// the scan accepts is then planned (defrag), so metadata the scan lets through can never
// break the planner's free-space bookkeeping. guestfrag::Error is the expected way to
// refuse bad input; anything else (crash, sanitizer report, Error(Internal), runaway
// allocation or loop) is a bug.
//
// Built by CMake with -DGUESTFRAG_BUILD_FUZZERS=ON (clang); `packaging/setup.sh fuzz`
// builds it with clang-14 and runs it on a seed made from `guestfrag mkimage --size 6M
// --table none --cluster-size 512`: its sectors as records, except those of zeros and the
// $LogFile's (all 0xFF, and a read-only scan never reads it).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/raw_image.hpp"
#include "core/ntfs/volume_reader.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/planner.hpp"

namespace {

constexpr std::size_t kSector = 512;
constexpr std::size_t kSectors = 12288;  // 6 MiB, the smallest volume mkimage makes
constexpr std::size_t kRecord = 2 + kSector;

void scan_and_plan(const std::uint8_t* data, std::size_t size) {
    // One volume buffer for all runs: a fresh 6 MiB allocation per input made the kernel's
    // page faulting most of the fuzzer's time. Sectors the previous input wrote are zeroed.
    static std::vector<std::byte> volume(kSectors * kSector);
    static std::vector<std::size_t> written;
    for (const std::size_t sector : written) std::memset(volume.data() + sector * kSector, 0, kSector);
    written.clear();
    for (std::size_t at = 0; at + kRecord <= size; at += kRecord) {
        const std::size_t sector = (data[at] | std::size_t{data[at + 1]} << 8) % kSectors;
        std::memcpy(volume.data() + sector * kSector, data + at + 2, kSector);
        written.push_back(sector);
    }
    // The source views the buffer, which outlives this call.
    auto input = std::make_shared<guestfrag::MemorySource>("ntfs-fuzz-input", std::span<const std::byte>(volume));
    try {
        const guestfrag::RawImage image(std::move(input));
        guestfrag::Partition whole;
        whole.number = 1;
        whole.start = 0;
        whole.length = image.size();
        (void)guestfrag::read_mft_map(image, whole);  // what verify_copy reads records through
        const guestfrag::VolumeMap map = guestfrag::read_ntfs_volume(image, whole, {});
        guestfrag::PlanOptions options;
        options.strategy = guestfrag::Strategy::Defrag;
        (void)guestfrag::make_plan(map, image.layers(), guestfrag::identify(map, image.path(), image.size()), options);
    } catch (const guestfrag::Error& e) {
        if (e.kind() == guestfrag::ErrorKind::Internal) __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    scan_and_plan(data, size);
    return 0;
}
