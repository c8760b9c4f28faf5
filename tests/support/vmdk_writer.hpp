// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

// Test-only writers for the VMDK variants qemu-img can read but not write: COWD
// (vmfsSparse) and seSparse extents, and stream-optimized files in the true streaming
// layout (grain directory at the end, found through the footer). Each takes a raw file
// and stores the grains that hold host data in it, so tests can compare what our reader
// makes of the result with what qemu-img makes of it.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace guestfrag::test {

/// Byte ranges [first, second) of the virtual disk.
using ByteRanges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

struct CowdWriteOptions {
    std::uint32_t grain_sectors = 1;
    /// Non-empty: a legacy redo log naming its parent in the header (root flag clear).
    std::string parent_file_name;
};

/// Writes `raw` as a COWD extent: grains overlapping the raw file's host data are stored
/// (in reverse disk order, so file offsets are not monotonic); others are unallocated.
void write_cowd_extent(const std::filesystem::path& raw, const std::filesystem::path& out,
                       const CowdWriteOptions& options = {});

struct SeSparseWriteOptions {
    ByteRanges zero;      ///< grains recorded as zero grains (type 2), grain-aligned
    ByteRanges unmapped;  ///< grains recorded as unmapped (type 1), grain-aligned
    /// Index of the first stored grain in the grain area; above 4095 exercises the high
    /// bits of the entry encoding (the skipped area stays a hole in the file).
    std::uint64_t first_grain_index = 0;
    bool dirty_journal = false;  ///< set the volatile header's replay-journal field
};

/// Writes `raw` as a seSparse extent (4 KiB grains): grains overlapping host data are
/// stored in reverse disk order, tables are allocated in reverse order too.
void write_sesparse_extent(const std::filesystem::path& raw, const std::filesystem::path& out,
                           const SeSparseWriteOptions& options = {});

/// Writes `raw` as a stream-optimized hosted sparse file the way VMware streams it:
/// header with GD_AT_END, embedded `descriptor`, deflated grains with markers, a grain
/// table (with its marker) after the grains it covers, the grain directory, the footer
/// and the end-of-stream marker.
void write_stream_optimized(const std::filesystem::path& raw, const std::filesystem::path& out,
                            const std::string& descriptor, std::uint64_t grain_sectors = 128);

/// One extent line of a descriptor.
struct DescriptorExtent {
    DescriptorExtent(std::uint64_t sectors_, std::string type_, std::string file_ = {},
                     std::optional<std::uint64_t> offset_ = std::nullopt, std::string access_ = "RW")
        : sectors(sectors_), type(std::move(type_)), file(std::move(file_)), offset(offset_), access(std::move(access_)) {}

    std::uint64_t sectors = 0;
    std::string type;  ///< "FLAT", "SPARSE", "ZERO", "VMFSSPARSE", "SESPARSE", ...
    std::string file;  ///< empty for ZERO
    std::optional<std::uint64_t> offset;
    std::string access = "RW";
};

/// A descriptor's text. parent_cid 0xffffffff and no hint: no parent.
std::string vmdk_descriptor_text(std::uint32_t cid, std::uint32_t parent_cid, const std::string& create_type,
                                 const std::vector<DescriptorExtent>& extents,
                                 const std::optional<std::string>& parent_hint = std::nullopt);

/// Writes `text` to `path` (replacing it).
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace guestfrag::test
