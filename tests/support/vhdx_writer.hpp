// SPDX-License-Identifier: GPL-2.0-or-later
// A small VHDX writer for tests: dynamic and differencing disks with chosen block states,
// sectors, GUIDs, parent locators, extra metadata items and regions, and log entries.
// qemu-img refuses differencing VHDX and writes no logs it leaves behind, so this is how
// tests get children with exactly known sector bitmaps and logs with exactly known
// contents. Written from the specification, independently of core/image/vhdx_*.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace guestfrag::test {

/// BAT payload block states.
enum class VhdxState : std::uint8_t {
    NotPresent = 0,
    Undefined = 1,
    Zero = 2,
    Unmapped = 3,
    FullyPresent = 6,
    PartiallyPresent = 7,
};

/// A metadata item or region the reader does not know.
struct VhdxExtraItem {
    std::string guid;  ///< "8-4-4-4-12" text
    std::vector<std::byte> data;
    bool required = false;
};

/// One 4 KiB write or a zeroing recorded in a log entry.
struct VhdxLogWrite {
    std::uint64_t file_offset = 0;  ///< multiple of 4 KiB
    std::vector<std::byte> sector;  ///< exactly 4096 bytes
};
struct VhdxLogZero {
    std::uint64_t file_offset = 0;
    std::uint64_t length = 0;  ///< multiple of 4 KiB
};
struct VhdxLogEntry {
    std::vector<VhdxLogZero> zeros;  ///< applied before the writes, in order
    std::vector<VhdxLogWrite> writes;
};

/// What VhdxWriter writes.
struct VhdxSpec {
    std::uint64_t virtual_size = 0;
    std::uint32_t block_size = 2u << 20;
    std::uint32_t logical_sector_size = 512;
    std::uint32_t physical_sector_size = 4096;
    bool has_parent = false;
    std::string data_write_guid = "5d1b5e1a-0000-4000-8000-00000000d0d0";
    std::string file_write_guid = "5d1b5e1a-0000-4000-8000-00000000f0f0";
    /// Parent locator key/value pairs (UTF-8, written as UTF-16LE), with has_parent.
    std::vector<std::pair<std::string, std::string>> parent_locator;
    std::string locator_type = "b04aefb7-d19e-4a81-b789-25b8e9445913";
    std::vector<VhdxExtraItem> extra_metadata;
    std::vector<VhdxExtraItem> extra_regions;  ///< data unused: each region is 1 MiB of zeros
    /// Log entries written as one active sequence (the header then names a log GUID).
    std::vector<VhdxLogEntry> log;
    /// Content of stored sectors whose bitmap bit is clear (stale data a reader must not show).
    std::byte filler{0xee};
};

/// Where things went in the file, for tests that patch it.
struct VhdxLayout {
    std::uint64_t log_offset = 0;
    std::uint64_t metadata_offset = 0;
    std::uint64_t bat_offset = 0;
    std::uint64_t bat_length = 0;
    std::map<std::uint64_t, std::uint64_t> block_offsets;   ///< stored block → file offset
    std::map<std::uint64_t, std::uint64_t> bitmap_offsets;  ///< chunk → file offset
    std::uint64_t file_size = 0;
};

/// Builds one VHDX file in memory block by block, then writes it.
class VhdxWriter {
public:
    explicit VhdxWriter(VhdxSpec spec);

    /// Stores `data` at virtual `offset` (both multiples of the logical sector size): in a
    /// differencing disk the block becomes partially present with those sectors' bits set
    /// (a fully present block stays so), otherwise fully present.
    void write(std::uint64_t offset, std::span<const std::byte> data);
    /// Sets a block's state; present states keep (or create) its stored contents.
    void set_state(std::uint64_t block, VhdxState state);
    VhdxSpec& spec() { return spec_; }

    /// Where save() puts things (depends only on the block states and the spec).
    [[nodiscard]] VhdxLayout layout() const;
    /// Writes the file (replacing it) and returns its layout.
    VhdxLayout save(const std::filesystem::path& path) const;

    /// BAT entry index of a payload block and of a chunk's sector bitmap.
    [[nodiscard]] std::uint64_t payload_index(std::uint64_t block) const;
    [[nodiscard]] std::uint64_t bitmap_index(std::uint64_t chunk) const;

private:
    struct Block {
        VhdxState state = VhdxState::NotPresent;
        std::vector<std::byte> data;  ///< block_size bytes when stored
        std::vector<bool> bits;       ///< per logical sector, partially present blocks
    };
    [[nodiscard]] std::uint64_t chunk_ratio() const;
    [[nodiscard]] std::uint64_t blocks() const;
    Block& stored(std::uint64_t block);

    VhdxSpec spec_;
    std::map<std::uint64_t, Block> blocks_;
};

/// The DataWriteGuid of the current header of the VHDX at `path` as lower-case text,
/// read straight from the header bytes (the header with the higher sequence number).
std::string vhdx_data_write_guid(const std::filesystem::path& path);

/// CRC-32C of `data` with the 4-byte field at `field` taken as zero, for tests that patch
/// checksummed structures.
std::uint32_t vhdx_test_crc(std::span<const std::byte> data, std::size_t field);

}  // namespace guestfrag::test
