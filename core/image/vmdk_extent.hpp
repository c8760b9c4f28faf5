// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/image/layer_file.hpp"

namespace guestfrag {

inline constexpr std::uint64_t kVmdkSectorSize = 512;

/// Largest virtual disk guestfrag accepts from a VMDK (VMware's own limit is 62 TB).
inline constexpr std::uint64_t kVmdkMaxDiskBytes = std::uint64_t{64} << 40;

/// Little-endian unsigned field of `bytes` at `at` (the caller checks the bounds).
[[nodiscard]] inline std::uint64_t vmdk_le(std::span<const std::byte> bytes, std::size_t at, std::size_t width) {
    std::uint64_t value = 0;
    for (std::size_t i = width; i-- > 0;) value = (value << 8) | std::to_integer<std::uint64_t>(bytes[at + i]);
    return value;
}

/// One extent of a VMDK layer: a FLAT file range, a ZERO range, or a sparse extent file
/// (hosted sparse, COWD, seSparse). It answers for its own part of the virtual disk,
/// addressed from 0. Immutable once opened; const methods are safe from several threads.
class VmdkExtent {
public:
    virtual ~VmdkExtent() = default;
    VmdkExtent() = default;
    VmdkExtent(const VmdkExtent&) = delete;
    VmdkExtent& operator=(const VmdkExtent&) = delete;

    /// Bytes of the virtual disk this extent covers.
    [[nodiscard]] virtual std::uint64_t size() const = 0;

    /// Allocation unit in bytes (grain, host block); 0 when the extent has none (ZERO).
    [[nodiscard]] virtual std::uint64_t granule() const = 0;

    /// Where this extent's data lies in its file, for the layer's granule: mapping runs
    /// of a FLAT extent start at host block boundaries of the file, so an extent starting
    /// at a misaligned file offset shifts them. 0 for the others.
    [[nodiscard]] virtual std::uint64_t file_start() const { return 0; }

    /// State at `offset` (< size()) and how far it holds, never past size(); `file_offset`
    /// is an offset in this extent's file. Throws Error(Corrupt) for table entries
    /// pointing outside the file, Error(Io) on read failures.
    [[nodiscard]] virtual Mapping map(std::uint64_t offset) const = 0;

    /// Reads [offset, offset + out.size()) inside [0, size()): stored bytes, zeros for
    /// ranges the extent declares zero or does not allocate. Throws like map(), and
    /// Error(Corrupt) for compressed data that does not inflate.
    virtual void read(std::uint64_t offset, std::span<std::byte> out) const = 0;

    /// Bytes its file really holds (ByteSource::held_bytes); 0 for ZERO extents.
    [[nodiscard]] virtual std::uint64_t held_bytes() const = 0;

    /// The physical extents of the extent's file when its bytes are the disk's (FLAT);
    /// nullopt for the others, whose host runs are their tables' (Layer::host_extents).
    [[nodiscard]] virtual std::optional<PhysicalFile> physical_file() const { return std::nullopt; }

    /// Whether a write lands at its own place in the file (FLAT), rather than where the
    /// extent puts new grains.
    [[nodiscard]] virtual bool writes_in_place() const { return false; }

    /// Short name of the extent kind for messages and tests ("flat", "zero", "sparse",
    /// "stream-optimized sparse", "cowd", "sesparse").
    [[nodiscard]] virtual std::string kind() const = 0;
};

}  // namespace guestfrag
