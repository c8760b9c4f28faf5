// SPDX-License-Identifier: GPL-2.0-or-later
// A small VHD writer for tests: dynamic and differencing disks with chosen sectors,
// parent ids, names and locators. qemu-img writes fixed and dynamic VHDs but no
// differencing ones, so this is how tests get children with exactly known sector bitmaps.
// Written from the specification, independently of core/image/vhd_*.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace guestfrag::test {

using VhdGuid = std::array<std::uint8_t, 16>;

/// One parent locator entry: platform code (e.g. 'W2ru' = 0x57327275) and its raw data.
struct VhdLocatorSpec {
    std::uint32_t code = 0;
    std::vector<std::byte> data;
};

inline constexpr std::uint32_t kVhdW2ru = 0x57327275;
inline constexpr std::uint32_t kVhdW2ku = 0x57326b75;
inline constexpr std::uint32_t kVhdWi2r = 0x57693272;
inline constexpr std::uint32_t kVhdWi2k = 0x5769326b;
inline constexpr std::uint32_t kVhdMacX = 0x4d616358;

/// What write_vhd writes.
struct VhdSpec {
    std::uint32_t disk_type = 4;  ///< 3 dynamic, 4 differencing
    std::uint64_t virtual_size = 0;
    std::uint32_t block_size = 2u << 20;
    VhdGuid unique_id{};
    VhdGuid parent_id{};
    std::string parent_name;               ///< ASCII/UTF-8, stored as UTF-16 big-endian
    std::vector<VhdLocatorSpec> locators;  ///< at most 8
    /// Sectors this layer stores (sector number → 512 bytes); their bitmap bits are set.
    std::map<std::uint64_t, std::vector<std::byte>> sectors;
    /// Blocks stored with nothing of theirs in `sectors` (all-clear bitmap).
    std::set<std::uint64_t> extra_blocks;
    /// Content of stored sectors whose bit is clear: not part of the disk, so a reader
    /// that shows them is wrong.
    std::byte filler{0xee};
    /// Lay blocks out in the file in descending block order (readers must not assume
    /// the file order follows the disk order).
    bool reverse_block_order = false;
};

/// Where write_vhd put things, for tests that patch the file.
struct VhdLayout {
    std::uint64_t header_offset = 0;
    std::uint64_t table_offset = 0;
    std::map<std::uint64_t, std::uint64_t> block_offsets;  ///< block → file offset of its bitmap
    std::uint64_t footer_offset = 0;
};

/// Writes a dynamic or differencing VHD at `path` (replacing it). Throws
/// std::runtime_error on I/O failure or a spec it cannot represent.
VhdLayout write_vhd(const std::filesystem::path& path, const VhdSpec& spec);

/// Makes the file at `path` a fixed VHD by appending a footer (disk type 2) whose current
/// size is `virtual_size`: the file's bytes so far are the disk's data. A `virtual_size`
/// larger than those bytes gives a truncated fixed disk. Throws std::runtime_error on I/O
/// failure or a size that is not whole sectors.
void append_fixed_vhd_footer(const std::filesystem::path& path, std::uint64_t virtual_size,
                             const VhdGuid& unique_id = {});

/// `text` (ASCII) as UTF-16 little-endian bytes, for W2ru/W2ku locators.
std::vector<std::byte> vhd_utf16le(const std::string& text);

/// `text` as raw bytes, for Wi2r/Wi2k/MacX locators.
std::vector<std::byte> vhd_bytes(const std::string& text);

/// The footer's unique id of an existing VHD (read from its last 512 bytes).
VhdGuid vhd_unique_id(const std::filesystem::path& path);

/// Recomputes the checksums of the footer at the end, its copy at offset 0 (when
/// present) and the dynamic header it points to, after a test patched fields.
void vhd_fix_checksums(const std::filesystem::path& path);

/// Writes big-endian `value` of `bytes` (1..8) bytes at `offset` of the file.
void patch_be(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t value, int bytes);

}  // namespace guestfrag::test
