// SPDX-License-Identifier: GPL-2.0-or-later
// On-disk structures of VHDX (MS-VHDX v1.0): the headers, the region table, the metadata
// table and its items, and the parent locator, each parsed from bytes and validated.
// Pure functions over byte spans: the file access lives in vhdx.cpp and vhdx_log.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace guestfrag::vhdx {

inline constexpr std::uint64_t KiB = 1024;
inline constexpr std::uint64_t MiB = 1024 * KiB;

/// Where the fixed structures live.
inline constexpr std::uint64_t kHeaderOffsets[2] = {64 * KiB, 128 * KiB};
inline constexpr std::uint64_t kHeaderBytes = 4 * KiB;
inline constexpr std::uint64_t kRegionTableOffsets[2] = {192 * KiB, 256 * KiB};
inline constexpr std::uint64_t kRegionTableBytes = 64 * KiB;
inline constexpr std::uint64_t kMetadataTableBytes = 64 * KiB;
/// The spec's limit on the virtual disk size.
inline constexpr std::uint64_t kMaxVirtualSize = std::uint64_t{64} << 40;
/// A sector bitmap block covers 2^23 sectors in 1 MiB.
inline constexpr std::uint64_t kSectorBitmapBytes = MiB;

/// CRC-32C (Castagnoli, reflected), the checksum of headers, region tables and log entries.
[[nodiscard]] std::uint32_t crc32c(std::span<const std::byte> data);

/// CRC-32C of `data` with the 4-byte checksum field at `field` taken as zero (how VHDX
/// structures are checksummed).
[[nodiscard]] std::uint32_t crc32c_without(std::span<const std::byte> data, std::size_t field);

/// Little-endian loads; the caller guarantees the bytes exist.
[[nodiscard]] std::uint64_t load_le(const std::byte* p, unsigned bytes);

/// A GUID in its on-disk form (Data1..Data3 little-endian, Data4 as bytes).
struct Guid {
    std::array<std::byte, 16> bytes{};

    [[nodiscard]] static Guid at(const std::byte* p);
    /// Parses "8-4-4-4-12" hex, with or without braces, any case; nullopt when malformed.
    [[nodiscard]] static std::optional<Guid> parse(std::string_view text);
    [[nodiscard]] bool is_zero() const;
    /// Lower-case "8-4-4-4-12" text without braces (Windows byte order: the first three
    /// fields read little-endian).
    [[nodiscard]] std::string text() const;
    friend bool operator==(const Guid&, const Guid&) = default;
};

/// Well-known GUIDs of the spec (region, metadata item and locator types).
namespace guids {
extern const Guid kBatRegion;
extern const Guid kMetadataRegion;
extern const Guid kFileParameters;
extern const Guid kVirtualDiskSize;
extern const Guid kPage83Data;
extern const Guid kLogicalSectorSize;
extern const Guid kPhysicalSectorSize;
extern const Guid kParentLocator;
extern const Guid kVhdxParentLocatorType;
}  // namespace guids

/// One of the two 4 KiB headers.
struct Header {
    std::uint64_t sequence_number = 0;
    Guid file_write_guid;
    Guid data_write_guid;
    Guid log_guid;  ///< non-zero: the log may hold writes not yet in the file
    std::uint16_t log_version = 0;
    std::uint16_t version = 0;
    std::uint32_t log_length = 0;
    std::uint64_t log_offset = 0;
};

/// Parses one header slot; nullopt when its signature or checksum is wrong (the slot is
/// then simply not current, as the spec says). `bytes` holds kHeaderBytes.
[[nodiscard]] std::optional<Header> parse_header(std::span<const std::byte> bytes);

/// Chooses the current header from the two slots (either may be nullopt) and checks its
/// fields. Throws Error(Corrupt) when neither is valid or the log fields are malformed,
/// Error(Unsupported) for versions other than 1 and log versions other than 0.
[[nodiscard]] Header current_header(const std::optional<Header>& first, const std::optional<Header>& second);

/// A region table entry.
struct Region {
    Guid guid;
    std::uint64_t file_offset = 0;
    std::uint32_t length = 0;
    bool required = false;
};

/// The regions guestfrag reads.
struct Regions {
    Region bat;
    Region metadata;
};

/// Parses one region table copy; nullopt when its signature or checksum is wrong.
/// `bytes` holds kRegionTableBytes.
[[nodiscard]] std::optional<std::vector<Region>> parse_region_table(std::span<const std::byte> bytes);

/// Validates the entries of the region table in use: alignment, bounds within
/// `file_size`, no overlaps or duplicates, BAT and metadata present. Throws
/// Error(Corrupt), or Error(Unsupported) for an unknown region marked required.
[[nodiscard]] Regions check_regions(const std::vector<Region>& regions, std::uint64_t file_size);

/// The disk geometry and parent locator from the metadata region.
struct Metadata {
    std::uint32_t block_size = 0;  ///< power of two, 1 MiB .. 256 MiB
    bool leave_blocks_allocated = false;
    bool has_parent = false;
    std::uint64_t virtual_size = 0;  ///< multiple of logical_sector_size, 1 .. kMaxVirtualSize
    std::uint32_t logical_sector_size = 0;   ///< 512 or 4096
    std::uint32_t physical_sector_size = 0;  ///< 512 or 4096
    std::optional<Guid> page83;
    /// Parent locator key/value pairs, UTF-8, in file order (only with has_parent).
    std::vector<std::pair<std::string, std::string>> parent_locator;

    /// Payload blocks the virtual size needs.
    [[nodiscard]] std::uint64_t data_blocks() const { return (virtual_size + block_size - 1) / block_size; }
    /// Payload blocks described by one sector bitmap block.
    [[nodiscard]] std::uint64_t chunk_ratio() const {
        return (std::uint64_t{1} << 23) * logical_sector_size / block_size;
    }
    /// Sector bitmap blocks (chunks) the payload blocks span.
    [[nodiscard]] std::uint64_t bitmap_blocks() const { return (data_blocks() + chunk_ratio() - 1) / chunk_ratio(); }
    /// BAT entries the spec requires for this geometry.
    [[nodiscard]] std::uint64_t bat_entries() const {
        return has_parent ? bitmap_blocks() * (chunk_ratio() + 1) : data_blocks() + (data_blocks() - 1) / chunk_ratio();
    }
    /// The value recorded for `key` in the parent locator, if any.
    [[nodiscard]] const std::string* locator_value(std::string_view key) const;
};

/// Reads `out.size()` bytes at `offset` within the metadata region.
using ItemReader = std::function<void(std::uint64_t offset, std::span<std::byte> out)>;

/// Parses the metadata region: `table` holds its first kMetadataTableBytes, `read_item`
/// reads the items it lists (each at most 1 MiB, within `region_length`, checked before
/// reading). Validates the table and every known item. Throws Error(Corrupt) for malformed tables, missing or invalid
/// items (block size not a power of two in range, sector sizes other than 512/4096,
/// absurd virtual size, malformed parent locator) and Error(Unsupported) for unknown
/// items marked required and parent locator types other than VHDX's.
[[nodiscard]] Metadata parse_metadata(std::span<const std::byte> table, std::uint64_t region_length,
                                      const ItemReader& read_item);

/// Decodes UTF-16LE (unpaired surrogates become U+FFFD) to UTF-8.
[[nodiscard]] std::string utf16le_to_utf8(std::span<const std::byte> bytes);

}  // namespace guestfrag::vhdx
