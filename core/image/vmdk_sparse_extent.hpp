// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/image/host_file.hpp"
#include "core/image/vmdk_grain_extent.hpp"

namespace guestfrag {

/// The validated header of a hosted sparse extent ("KDMV": monolithicSparse,
/// twoGbMaxExtentSparse extents, streamOptimized). All offsets and sizes in sectors.
struct VmdkSparseHeader {
    static constexpr std::uint32_t kFlagNewlineTest = 1u << 0;
    static constexpr std::uint32_t kFlagRedundantGd = 1u << 1;
    static constexpr std::uint32_t kFlagZeroedGrainGte = 1u << 2;
    static constexpr std::uint32_t kFlagCompressed = 1u << 16;
    static constexpr std::uint32_t kFlagMarkers = 1u << 17;
    static constexpr std::uint64_t kGdAtEnd = ~std::uint64_t{0};
    static constexpr std::uint16_t kCompressionDeflate = 1;

    std::uint32_t version = 0;
    std::uint32_t flags = 0;
    std::uint64_t capacity = 0;       ///< virtual sectors of this extent
    std::uint64_t grain_sectors = 0;  ///< power of two, ≥ 8
    std::uint64_t descriptor_offset = 0;
    std::uint64_t descriptor_size = 0;
    std::uint32_t gtes_per_gt = 0;
    std::uint64_t rgd_offset = 0;
    std::uint64_t gd_offset = 0;  ///< the footer's value when the header says GD_AT_END
    std::uint64_t overhead = 0;
    bool unclean_shutdown = false;
    std::uint16_t compress_algorithm = 0;
    bool from_footer = false;  ///< a stream-optimized file with GD_AT_END: values come from its footer

    /// Grains are deflated (compressAlgorithm 1; qemu and VMware go by this field).
    [[nodiscard]] bool compressed() const { return compress_algorithm == kCompressionDeflate; }
    /// Each compressed grain starts with a 12-byte marker (LBA, size).
    [[nodiscard]] bool markers() const { return (flags & kFlagMarkers) != 0; }
    /// A grain table entry of 1 means "zeroed grain".
    [[nodiscard]] bool zeroed_grain_gte() const { return (flags & kFlagZeroedGrainGte) != 0; }
    [[nodiscard]] std::uint64_t grain_bytes() const { return grain_sectors * 512; }
    /// Grain directory entries the capacity needs.
    [[nodiscard]] std::uint64_t gd_entries() const;
};

/// Reads and validates the header at the start of `file` and, when it says GD_AT_END,
/// the stream-optimized footer (footer marker, footer header, end-of-stream marker in the
/// last three sectors). Throws Error(Corrupt) for a bad magic, damaged end-of-line test
/// bytes, a grain size that is not a power of two ≥ 8, a grain directory or embedded
/// descriptor outside the file, a missing footer; Error(Unsupported) for versions above 3,
/// unknown incompatible flags or compression algorithms, sizes beyond 64 TiB.
[[nodiscard]] VmdkSparseHeader read_vmdk_sparse_header(const HostFile& file);

/// The descriptor text embedded in a hosted sparse extent ("" when it has none).
[[nodiscard]] std::string read_vmdk_embedded_descriptor(const HostFile& file, const VmdkSparseHeader& header);

/// A hosted sparse extent: 32-bit grain directory → grain tables → grains; with the
/// zeroed-grain flag, entry 1 means zero; stream-optimized extents store every grain as a
/// marker (LBA, size) followed by a zlib stream. The grain directory is loaded at open.
class VmdkSparseExtent final : public VmdkGrainExtent {
public:
    /// Takes the file and its header (from read_vmdk_sparse_header) and loads the grain
    /// directory. Throws Error(Corrupt/Io) when it cannot be read.
    VmdkSparseExtent(HostFile file, const VmdkSparseHeader& header);

    [[nodiscard]] std::string kind() const override;
    [[nodiscard]] const VmdkSparseHeader& header() const noexcept { return header_; }

protected:
    [[nodiscard]] std::shared_ptr<const VmdkGrainTable> load_table(std::uint64_t table) const override;
    void inflate_grain(std::uint64_t grain, std::uint64_t offset, std::span<std::byte> out) const override;

private:
    VmdkSparseHeader header_;
    std::vector<std::uint32_t> directory_;
};

}  // namespace guestfrag
