// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace guestfrag {

class HostFile;

/// Largest virtual disk the qcow2 reader accepts. Larger sizes are almost certainly a
/// damaged header, and every table size below is derived from it.
inline constexpr std::uint64_t kQcow2MaxVirtualSize = std::uint64_t{64} << 40;

/// qemu's own cap on the active L1 table (32 MiB of entries); a bigger table is refused
/// before anything is allocated for it.
inline constexpr std::uint64_t kQcow2MaxL1Entries = (std::uint64_t{32} << 20) / 8;

/// The fields of a qcow2 (version 2 or 3) header that guestfrag uses, validated against
/// each other and against the file size. Plain data; see parse_qcow2_header.
struct Qcow2Header {
    std::uint32_t version = 0;       ///< 2 or 3
    std::uint32_t cluster_bits = 0;  ///< 9..21
    std::uint64_t virtual_size = 0;  ///< bytes, at most kQcow2MaxVirtualSize
    std::uint64_t l1_table_offset = 0;
    std::uint64_t l1_entries = 0;  ///< L1 entries the virtual size needs (≤ the recorded l1_size)
    std::uint64_t incompatible_features = 0;
    bool dirty = false;        ///< refcounts may be stale (lazy refcounts); L1/L2 are still valid
    bool extended_l2 = false;  ///< 128-bit L2 entries with 32 subclusters per cluster
    std::optional<std::string> backing_file;    ///< as recorded (relative names are the child's)
    std::optional<std::string> backing_format;  ///< the backing-format header extension, if any

    [[nodiscard]] std::uint64_t cluster_size() const { return std::uint64_t{1} << cluster_bits; }
    /// Bytes per L2 entry: 8, or 16 with extended L2 (entry + subcluster bitmap).
    [[nodiscard]] std::uint64_t l2_entry_bytes() const { return extended_l2 ? 16 : 8; }
    /// L2 entries per L2 table (one cluster).
    [[nodiscard]] std::uint64_t l2_entries() const { return cluster_size() / l2_entry_bytes(); }
    /// log2 of the allocation granule: the cluster, or the subcluster with extended L2.
    [[nodiscard]] std::uint32_t granule_bits() const { return cluster_bits - (extended_l2 ? 5 : 0); }
    /// Granules per cluster: 1, or 32 with extended L2.
    [[nodiscard]] std::uint32_t granules_per_cluster() const { return extended_l2 ? 32 : 1; }
};

/// Bytes of the file parse_qcow2_header needs: the first cluster, or the whole file when it
/// is shorter. `head` must hold at least the first 24 bytes (for cluster_bits) or be the
/// whole file.
[[nodiscard]] std::uint64_t qcow2_header_bytes(std::span<const std::byte> head, std::uint64_t file_size);

/// Parses and validates a qcow2 header from the first bytes of the file (`head`: the first
/// cluster, or the whole file when it is shorter; see qcow2_header_bytes). Pure function.
/// Throws Error(Corrupt) for inconsistent fields (bad magic, cluster size, L1 table outside
/// the file or too small for the virtual size, malformed header extensions, the "corrupt"
/// flag) and Error(Unsupported) for valid images using something the reader does not
/// handle (version 1 or > 3, encryption, external data files, zstd compression, unknown
/// incompatible features, virtual sizes above kQcow2MaxVirtualSize).
[[nodiscard]] Qcow2Header parse_qcow2_header(std::span<const std::byte> head, std::uint64_t file_size);

/// Reads the header cluster of `file` and parses it with parse_qcow2_header.
[[nodiscard]] Qcow2Header read_qcow2_header(const HostFile& file);

/// Big-endian loads used by the qcow2 tables (the caller guarantees the bytes exist).
[[nodiscard]] inline std::uint64_t qcow2_load_be(const std::byte* p, unsigned bytes) {
    std::uint64_t value = 0;
    for (unsigned i = 0; i < bytes; ++i) value = (value << 8) | std::to_integer<std::uint64_t>(p[i]);
    return value;
}

}  // namespace guestfrag
