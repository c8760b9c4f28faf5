// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace guestfrag {

/// Access mode of one extent line ("RW", "RDONLY", "NOACCESS").
enum class VmdkAccess : std::uint8_t { ReadWrite, ReadOnly, NoAccess };

/// Extent type of one extent line.
enum class VmdkExtentType : std::uint8_t {
    Flat,        ///< FLAT: plain data at `offset` sectors into the file
    Sparse,      ///< SPARSE: hosted sparse ("KDMV") extent file
    Zero,        ///< ZERO: reads as zeros, no file
    Vmfs,        ///< VMFS: plain data file on VMFS (like FLAT)
    VmfsSparse,  ///< VMFSSPARSE: COWD (vmfsSparse) extent file
    VmfsRdm,     ///< VMFSRDM: raw device mapping
    VmfsRaw,     ///< VMFSRAW: raw device
    SeSparse,    ///< SESPARSE: space-efficient sparse extent file
};

/// Upper-case name as written in descriptors ("FLAT", "SPARSE", ...).
[[nodiscard]] std::string_view vmdk_extent_type_name(VmdkExtentType type) noexcept;

/// One line of the "# Extent description" section, e.g. `RW 4192256 SPARSE "x-s001.vmdk"`.
struct VmdkExtentLine {
    VmdkAccess access = VmdkAccess::ReadWrite;
    std::uint64_t sectors = 0;  ///< size of the extent in 512-byte sectors (> 0)
    VmdkExtentType type = VmdkExtentType::Flat;
    std::string file;          ///< as written (relative to the descriptor's directory); empty for ZERO
    std::uint64_t offset = 0;  ///< FLAT/VMFS: start of the data in the file, in sectors
};

/// A parsed VMDK text descriptor (a separate `.vmdk` file or the one embedded in a
/// hosted sparse extent). Only syntax is checked here; what the values mean for the
/// disk (extent files, parents) is decided by the reader.
struct VmdkDescriptor {
    static constexpr std::uint32_t kNoParent = 0xffffffffu;

    std::optional<std::uint32_t> cid;       ///< content id ("CID=" hex)
    std::uint32_t parent_cid = kNoParent;   ///< "parentCID=", ffffffff = no parent
    std::string create_type;                ///< "createType=" without quotes
    std::optional<std::string> parent_hint; ///< "parentFileNameHint=" without quotes
    std::vector<VmdkExtentLine> extents;    ///< in disk order
    /// Every `key = value` line (header keys and ddb.* keys), quotes removed; the last
    /// occurrence of a key wins.
    std::map<std::string, std::string, std::less<>> values;

    /// Sum of the extent sizes in sectors (checked not to overflow by the parser).
    [[nodiscard]] std::uint64_t total_sectors() const;
};

/// Longest descriptor text guestfrag parses (a split 62 TB disk needs about 2 MB).
inline constexpr std::size_t kMaxVmdkDescriptorBytes = 16u << 20;

/// Most extent lines accepted in one descriptor.
inline constexpr std::size_t kMaxVmdkExtents = 65536;

/// Parses descriptor text. Lines end with "\n" (a "\r" before it is dropped); lines whose
/// first non-blank character is "#" are comments; text after a NUL byte is ignored
/// (embedded descriptors are NUL-padded). Lines that are neither extents nor `key = value`
/// are skipped (qemu skips them too). Throws Error(Corrupt, "descriptor line N: ...") for
/// malformed extent lines, a bad CID/parentCID or sizes that overflow, Error(Unsupported)
/// for an unknown extent type or more than kMaxVmdkExtents extents.
[[nodiscard]] VmdkDescriptor parse_vmdk_descriptor(std::string_view text);

}  // namespace guestfrag
