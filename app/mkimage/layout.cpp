// SPDX-License-Identifier: GPL-2.0-or-later
// Option checks that need no file population: everything here is rejected before the
// output is touched, so a typo never truncates an existing image.
#include "app/mkimage/layout.hpp"

#include <bit>
#include <string>

#include "app/mkimage/population.hpp"
#include "core/error.hpp"

namespace guestfrag::mkimage {

namespace {

[[noreturn]] void reject(const std::string& reason) { throw Error(ErrorKind::Unsupported, reason); }

/// Code points in a UTF-8 string (continuation bytes not counted).
std::size_t code_points(const std::string& text) {
    std::size_t count = 0;
    for (const char c : text)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
    return count;
}

void check_label(const std::string& label) {
    // NTFS keeps the label as at most 32 UTF-16 units in $Volume's $VOLUME_NAME.
    if (code_points(label) > 32) reject("--label is longer than 32 characters");
    for (const char c : label)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) reject("--label contains a control character");
}

// The smallest volume we accept: mkntfs itself needs about 1 MiB; below a few MiB there is
// no room left for a population worth analysing.
constexpr std::uint64_t kMinVolume = 4ull << 20;

}  // namespace

DiskLayout plan_layout(const MkImageOptions& options) {
    if (options.output.empty()) reject("no output path");
    if (options.table != "msdos" && options.table != "gpt" && options.table != "none")
        reject("--table must be msdos, gpt or none, not '" + options.table + "'");
    const std::uint32_t cluster = options.cluster_size;
    // mkntfs accepts up to 2 MiB (Windows 10 1709+); 512 B is the sector size we write.
    if (!std::has_single_bit(cluster) || cluster < kSectorSize || cluster > (2u << 20))
        reject("--cluster-size must be a power of two from 512 to 2M, not " + std::to_string(cluster));
    if (options.compressed && cluster > kMaxCompressedCluster)
        reject("--compressed needs clusters of at most 4K (NTFS compresses nothing on larger ones), not " +
               std::to_string(cluster));
    if (options.disk_size % kSectorSize != 0) reject("--size must be a multiple of 512 bytes");
    if (!(options.delete_fraction >= 0.0 && options.delete_fraction <= 1.0))
        reject("--delete-fraction must be between 0 and 1");
    if (!(options.fill > 0.0 && options.fill <= 0.95)) reject("--fill must be above 0 and at most 0.95");
    if (options.interleave < 1 || options.interleave > 4096) reject("--interleave must be 1 to 4096");
    // One MFT record each, and NTFS numbers records in 32 bits in practice.
    if (options.files > 100'000'000) reject("--files must be at most 100000000");
    if (options.directories > 10'000'000) reject("--dirs must be at most 10000000");
    check_label(options.label);

    DiskLayout layout;
    if (options.table == "none") {
        layout.partitioned = false;
        layout.volume_offset = 0;
        layout.volume_length = options.disk_size;
    } else {
        const std::uint64_t start = options.partition_start;
        if (start % kSectorSize != 0) reject("--partition-start must be a multiple of 512 bytes");
        const bool gpt = options.table == "gpt";
        const std::uint64_t first = gpt ? kGptFirstUsableSector : 1;
        if (start / kSectorSize < first)
            reject("--partition-start must be at least " + std::to_string(first * kSectorSize) +
                   " bytes for " + options.table);
        const std::uint64_t tail = gpt ? kGptBackupSectors * kSectorSize : 0;
        if (start >= options.disk_size || options.disk_size - start <= tail)
            reject("--partition-start is beyond the end of the disk");
        layout.volume_offset = start;
        layout.volume_length = options.disk_size - start - tail;
        // An MBR entry holds 32-bit start and length sector numbers.
        if (!gpt && (start / kSectorSize + layout.volume_length / kSectorSize) > 0xFFFFFFFFull)
            reject("--size is too large for an msdos table (2 TiB); use --table gpt");
    }
    if (layout.volume_length < kMinVolume)
        reject("the NTFS volume would be smaller than 4 MiB; raise --size");
    if (layout.volume_length / cluster > 0xFFFFFFFFull)
        reject("the volume would have more than 2^32 clusters; raise --cluster-size");
    return layout;
}

}  // namespace guestfrag::mkimage
