// SPDX-License-Identifier: GPL-2.0-or-later
// On-disk structures of the VHD format (Virtual PC / Virtual Server / Hyper-V "vpc"),
// as described in Microsoft's "Virtual Hard Disk Image Format Specification" 1.0:
// the 512-byte footer ("conectix") and, for dynamic and differencing disks, the
// 1024-byte dynamic disk header ("cxsparse"). All fields are big-endian.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace guestfrag::vhd {

inline constexpr std::uint64_t kSectorSize = 512;
inline constexpr std::size_t kFooterSize = 512;
inline constexpr std::size_t kDynamicHeaderSize = 1024;
inline constexpr std::size_t kLocatorCount = 8;
/// BAT entry of a block that is not stored in the file.
inline constexpr std::uint32_t kBatUnused = 0xffffffffu;
/// Largest virtual size accepted: far above what any VHD writer produces (Hyper-V stops
/// at 2040 GiB), low enough that a corrupt size field is caught at open.
inline constexpr std::uint64_t kMaxVirtualSize = std::uint64_t{64} << 40;

/// Disk types the reader handles (footer "disk type"); 0, 1, 5 and 6 are reserved or
/// deprecated by the specification.
enum class DiskType : std::uint32_t { Fixed = 2, Dynamic = 3, Differencing = 4 };

using Guid = std::array<std::uint8_t, 16>;

/// The fields of the footer the reader uses, validated by parse_footer.
struct Footer {
    std::uint64_t data_offset = 0;   ///< file offset of the dynamic header (unused when fixed)
    std::uint64_t current_size = 0;  ///< virtual disk size in bytes, a multiple of 512
    DiskType disk_type = DiskType::Fixed;
    Guid unique_id{};
};

/// Platform codes of parent locator entries.
enum class LocatorCode : std::uint32_t {
    None = 0,
    Wi2r = 0x57693272,  ///< deprecated: relative Windows path, ASCII
    Wi2k = 0x5769326b,  ///< deprecated: absolute Windows path, ASCII
    W2ru = 0x57327275,  ///< relative Windows path, UTF-16 little-endian
    W2ku = 0x57326b75,  ///< absolute Windows path, UTF-16 little-endian
    Mac = 0x4d616320,   ///< Mac OS alias record (binary; only a file URL is understood)
    MacX = 0x4d616358,  ///< file URL, UTF-8
};

/// One parent locator entry (where the parent's path is stored in the file).
struct Locator {
    std::uint32_t code = 0;
    std::uint32_t data_length = 0;  ///< bytes of path data
    std::uint64_t data_offset = 0;  ///< absolute file offset of the path data
};

/// The fields of the dynamic disk header the reader uses, validated by
/// parse_dynamic_header (block size, table size) but not against the file size.
struct DynamicHeader {
    std::uint64_t table_offset = 0;  ///< file offset of the block allocation table
    std::uint32_t max_table_entries = 0;
    std::uint32_t block_size = 0;  ///< power of two, ≥ 512
    Guid parent_id{};
    std::string parent_name;  ///< parent unicode name converted to UTF-8
    std::array<Locator, kLocatorCount> locators{};
};

/// The specification's checksum: one's complement of the byte sum of `bytes`, skipping the
/// four bytes of the checksum field at `checksum_offset`.
[[nodiscard]] std::uint32_t checksum(std::span<const std::byte> bytes, std::size_t checksum_offset) noexcept;

/// Parses and validates a footer (cookie, checksum, version, disk type, size).
/// Throws Error(Corrupt) for damage and Error(Unsupported) for versions and disk types
/// the reader does not handle.
[[nodiscard]] Footer parse_footer(std::span<const std::byte, kFooterSize> bytes);

/// Parses and validates a dynamic disk header (cookie, checksum, version, block size,
/// table size against `virtual_size`). Throws Error(Corrupt) / Error(Unsupported).
[[nodiscard]] DynamicHeader parse_dynamic_header(std::span<const std::byte, kDynamicHeaderSize> bytes,
                                                 std::uint64_t virtual_size);

/// Lower-case hex text of a unique id in the file's byte order, 8-4-4-4-12 with dashes
/// (the identity format of VHD layers).
[[nodiscard]] std::string guid_text(const Guid& id);

/// Converts UTF-16 text (big- or little-endian) to UTF-8, stopping at the first NUL;
/// unpaired surrogates become U+FFFD.
[[nodiscard]] std::string utf16_to_utf8(std::span<const std::byte> bytes, bool big_endian);

}  // namespace guestfrag::vhd
