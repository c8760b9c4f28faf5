// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_sparse_extent.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "core/image/vmdk_descriptor.hpp"
#include "core/image/vmdk_inflate.hpp"

namespace guestfrag {
namespace {

constexpr std::uint32_t kMagic = 0x564d444b;  // "KDMV" read little-endian
constexpr std::uint32_t kKnownIncompatFlags = VmdkSparseHeader::kFlagCompressed | VmdkSparseHeader::kFlagMarkers;
constexpr std::uint64_t kMaxGrainSectors = std::uint64_t{1} << 21;            // 1 GiB, qemu's limit
constexpr std::uint64_t kMaxCompressedGrainSectors = std::uint64_t{1} << 15;  // 16 MiB inflate buffers
constexpr std::uint64_t kMaxGdEntries = std::uint64_t{1} << 25;
constexpr std::uint32_t kMarkerEndOfStream = 0;
constexpr std::uint32_t kMarkerFooter = 3;
constexpr std::size_t kGrainMarkerBytes = 12;

[[noreturn]] void corrupt(const std::string& what) { throw Error(ErrorKind::Corrupt, what); }

std::string hex(std::uint64_t value) {
    std::ostringstream out;
    out << "0x" << std::hex << value;
    return out.str();
}

/// Parses and checks one header sector (the file's first, or the footer's).
VmdkSparseHeader parse_header(std::span<const std::byte> s, const char* what) {
    if (vmdk_le(s, 0, 4) != kMagic) corrupt(std::string(what) + " is not a hosted sparse extent header (bad magic)");
    VmdkSparseHeader h;
    h.version = static_cast<std::uint32_t>(vmdk_le(s, 4, 4));
    h.flags = static_cast<std::uint32_t>(vmdk_le(s, 8, 4));
    h.capacity = vmdk_le(s, 12, 8);
    h.grain_sectors = vmdk_le(s, 20, 8);
    h.descriptor_offset = vmdk_le(s, 28, 8);
    h.descriptor_size = vmdk_le(s, 36, 8);
    h.gtes_per_gt = static_cast<std::uint32_t>(vmdk_le(s, 44, 4));
    h.rgd_offset = vmdk_le(s, 48, 8);
    h.gd_offset = vmdk_le(s, 56, 8);
    h.overhead = vmdk_le(s, 64, 8);
    h.unclean_shutdown = vmdk_le(s, 72, 1) != 0;
    h.compress_algorithm = static_cast<std::uint16_t>(vmdk_le(s, 77, 2));

    if (h.version == 0 || h.version > 3)
        throw Error(ErrorKind::Unsupported, "vmdk: sparse extent version " + std::to_string(h.version) + " is not supported");
    // The high 16 flag bits are incompatible features: a reader that does not know one
    // cannot read the extent correctly.
    if (const std::uint32_t unknown = h.flags & 0xffff0000u & ~kKnownIncompatFlags)
        throw Error(ErrorKind::Unsupported, "vmdk: sparse extent flags " + hex(unknown) + " are not supported");
    // These four bytes exist to detect files that went through a text-mode transfer.
    if ((h.flags & VmdkSparseHeader::kFlagNewlineTest) != 0 &&
        (vmdk_le(s, 73, 1) != '\n' || vmdk_le(s, 74, 1) != ' ' || vmdk_le(s, 75, 1) != '\r' || vmdk_le(s, 76, 1) != '\n'))
        corrupt(std::string(what) + ": end-of-line test bytes are damaged (was the file transferred in text mode?)");
    if (h.compress_algorithm > VmdkSparseHeader::kCompressionDeflate)
        throw Error(ErrorKind::Unsupported,
                    "vmdk: compression algorithm " + std::to_string(h.compress_algorithm) + " is not supported");
    if (h.capacity == 0) corrupt(std::string(what) + ": capacity of 0 sectors");
    if (h.capacity > kVmdkMaxDiskBytes / kVmdkSectorSize)
        throw Error(ErrorKind::Unsupported, "vmdk: a capacity of " + std::to_string(h.capacity) +
                                                " sectors exceeds the 64 TiB limit");
    if (h.grain_sectors < 8 || !std::has_single_bit(h.grain_sectors))
        corrupt(std::string(what) + ": grain size of " + std::to_string(h.grain_sectors) +
                " sectors is not a power of two of at least 8");
    if (h.grain_sectors > (h.compressed() ? kMaxCompressedGrainSectors : kMaxGrainSectors))
        throw Error(ErrorKind::Unsupported,
                    "vmdk: grains of " + std::to_string(h.grain_sectors) + " sectors are not supported");
    if (h.gtes_per_gt == 0) corrupt(std::string(what) + ": 0 grain table entries per grain table");
    if (h.gtes_per_gt > 512)
        throw Error(ErrorKind::Unsupported,
                    "vmdk: grain tables of " + std::to_string(h.gtes_per_gt) + " entries are not supported");
    return h;
}

/// The stream-optimized footer: footer marker, a copy of the header with the real grain
/// directory offset, end-of-stream marker — the last three sectors of the file.
VmdkSparseHeader read_footer(const HostFile& file, const VmdkSparseHeader& header) {
    const std::uint64_t end = file.size() / kVmdkSectorSize * kVmdkSectorSize;
    const auto missing = [] {
        corrupt("stream-optimized extent has no footer and end-of-stream marker at its end (truncated file?)");
    };
    if (end < 4 * kVmdkSectorSize) missing();
    std::array<std::byte, 3 * kVmdkSectorSize> tail{};
    file.read_exact(end - tail.size(), tail, "footer");
    const std::span<const std::byte> marker(tail.data(), 512), footer(tail.data() + 512, 512), eos(tail.data() + 1024, 512);
    if (vmdk_le(marker, 8, 4) != 0 || vmdk_le(marker, 12, 4) != kMarkerFooter || vmdk_le(eos, 0, 8) != 0 ||
        vmdk_le(eos, 8, 4) != 0 || vmdk_le(eos, 12, 4) != kMarkerEndOfStream || vmdk_le(footer, 0, 4) != kMagic)
        missing();
    VmdkSparseHeader h = parse_header(footer, "footer");
    if (h.gd_offset == VmdkSparseHeader::kGdAtEnd) corrupt("stream-optimized footer has no grain directory offset");
    if (h.capacity != header.capacity || h.grain_sectors != header.grain_sectors)
        corrupt("stream-optimized footer disagrees with the header about capacity or grain size");
    h.from_footer = true;
    return h;
}

}  // namespace

std::uint64_t VmdkSparseHeader::gd_entries() const {
    const std::uint64_t per_table = grain_sectors * gtes_per_gt;
    return (capacity + per_table - 1) / per_table;
}

VmdkSparseHeader read_vmdk_sparse_header(const HostFile& file) {
    std::array<std::byte, kVmdkSectorSize> sector{};
    file.read_exact(0, sector, "sparse extent header");
    VmdkSparseHeader h = parse_header(sector, "sparse extent header");
    if (h.gd_offset == VmdkSparseHeader::kGdAtEnd) h = read_footer(file, h);

    const std::uint64_t sectors = file.size() / kVmdkSectorSize;
    if (h.gd_offset == 0) corrupt("grain directory at sector 0 overlaps the header");
    const std::uint64_t entries = h.gd_entries();
    if (entries > kMaxGdEntries)
        throw Error(ErrorKind::Unsupported,
                    "vmdk: grain directories of " + std::to_string(entries) + " entries are not supported");
    const std::uint64_t gd_bytes = entries * 4;
    if (h.gd_offset > sectors || gd_bytes > file.size() - h.gd_offset * kVmdkSectorSize)
        corrupt("grain directory at sector " + std::to_string(h.gd_offset) + " (" + std::to_string(entries) +
                " entries) lies past the end of the file (" + std::to_string(file.size()) + " bytes)");
    if (h.descriptor_offset != 0) {
        if (h.descriptor_size > kMaxVmdkDescriptorBytes / kVmdkSectorSize)
            throw Error(ErrorKind::Unsupported, "vmdk: embedded descriptors of " + std::to_string(h.descriptor_size) +
                                                    " sectors are not supported");
        if (h.descriptor_offset > sectors || h.descriptor_size > sectors - h.descriptor_offset)
            corrupt("embedded descriptor at sector " + std::to_string(h.descriptor_offset) +
                    " lies past the end of the file (" + std::to_string(file.size()) + " bytes)");
    }
    return h;
}

std::string read_vmdk_embedded_descriptor(const HostFile& file, const VmdkSparseHeader& header) {
    if (header.descriptor_offset == 0 || header.descriptor_size == 0) return {};
    std::string text(static_cast<std::size_t>(header.descriptor_size * kVmdkSectorSize), '\0');
    file.read_exact(header.descriptor_offset * kVmdkSectorSize, std::as_writable_bytes(std::span(text)),
                    "embedded descriptor");
    if (const auto nul = text.find('\0'); nul != std::string::npos) text.resize(nul);
    return text;
}

VmdkSparseExtent::VmdkSparseExtent(HostFile file, const VmdkSparseHeader& header)
    : VmdkGrainExtent(std::move(file), header.capacity * kVmdkSectorSize, header.grain_bytes(), header.gtes_per_gt),
      header_(header) {
    const std::uint64_t entries = header_.gd_entries();
    std::vector<std::byte> raw(static_cast<std::size_t>(entries * 4));
    this->file().read_exact(header_.gd_offset * kVmdkSectorSize, raw, "grain directory");
    directory_.resize(static_cast<std::size_t>(entries));
    for (std::size_t i = 0; i < directory_.size(); ++i)
        directory_[i] = static_cast<std::uint32_t>(vmdk_le(raw, i * 4, 4));
    // With zeroed-grain entries, 1 stands for a table of zeroed grains, not a table.
    const std::uint32_t own_table = header_.zeroed_grain_gte() ? 2 : 1;
    std::vector<std::uint64_t> tables(directory_.size());
    for (std::size_t i = 0; i < tables.size(); ++i) tables[i] = directory_[i] >= own_table ? directory_[i] : 0;
    refuse_shared_tables(tables);
}

std::string VmdkSparseExtent::kind() const { return header_.compressed() ? "stream-optimized sparse" : "sparse"; }

std::shared_ptr<const VmdkGrainTable> VmdkSparseExtent::load_table(std::uint64_t table) const {
    const std::uint32_t gde = directory_[static_cast<std::size_t>(table)];
    if (gde == 0) return nullptr;
    const std::uint64_t count = grains_in_table(table);
    const std::uint64_t first_grain = table * header_.gtes_per_gt;
    if (gde == 1 && header_.zeroed_grain_gte()) {
        // With zeroed-grain entries, a directory entry of 1 marks a whole table of zeroed grains.
        return std::make_shared<const VmdkGrainTable>(static_cast<std::size_t>(count),
                                                      VmdkGrain{VmdkGrain::Kind::Zero, 0});
    }
    std::vector<std::byte> raw(static_cast<std::size_t>(count * 4));
    const std::string what = "grain directory entry " + std::to_string(table) + ": grain table";
    file().read_exact(std::uint64_t{gde} * kVmdkSectorSize, raw, what.c_str());
    auto decoded = std::make_shared<VmdkGrainTable>(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) {
        const auto gte = static_cast<std::uint32_t>(vmdk_le(raw, static_cast<std::size_t>(i * 4), 4));
        VmdkGrain& g = (*decoded)[static_cast<std::size_t>(i)];
        const std::uint64_t offset = std::uint64_t{gte} * kVmdkSectorSize;
        if (gte == 0) continue;
        if (gte == 1 && header_.zeroed_grain_gte()) {
            g.kind = VmdkGrain::Kind::Zero;
        } else if (header_.compressed()) {
            if (offset >= file().size())
                corrupt("grain table " + std::to_string(table) + " entry " + std::to_string(i) +
                        ": compressed grain at offset " + std::to_string(offset) + " lies past the end of the file (" +
                        std::to_string(file().size()) + " bytes)");
            g = {VmdkGrain::Kind::Compressed, offset};
        } else {
            check_stored_grain(table, i, first_grain + i, offset, kVmdkSectorSize);
            g = {VmdkGrain::Kind::Data, offset};
        }
    }
    return decoded;
}

void VmdkSparseExtent::inflate_grain(std::uint64_t grain, std::uint64_t offset, std::span<std::byte> out) const {
    const std::string name = "compressed grain " + std::to_string(grain) + " at offset " + std::to_string(offset);
    std::vector<std::byte> stream;
    if (header_.markers()) {
        std::array<std::byte, kGrainMarkerBytes> marker{};
        file().read_exact(offset, marker, "compressed grain marker");
        const std::uint64_t lba = vmdk_le(marker, 0, 8);
        const std::uint64_t size = vmdk_le(marker, 8, 4);
        if (size == 0) corrupt(name + ": the grain table points at a metadata marker, not a grain");
        if (lba != grain * header_.grain_sectors)
            corrupt(name + ": its marker names sector " + std::to_string(lba) + ", the grain table sector " +
                    std::to_string(grain * header_.grain_sectors));
        // A deflate stream is at most a few bytes per 16 KiB larger than its input.
        if (size > 2 * grain_bytes() + kVmdkSectorSize)
            corrupt(name + ": " + std::to_string(size) + " compressed bytes for a grain of " +
                    std::to_string(grain_bytes()));
        stream.resize(static_cast<std::size_t>(size));
        file().read_exact(offset + kGrainMarkerBytes, stream, "compressed grain data");
    } else {
        // Without markers the stream's length is not recorded: read as much as one can take.
        const std::uint64_t available = std::min(2 * grain_bytes() + kVmdkSectorSize, file().size() - offset);
        stream.resize(static_cast<std::size_t>(available));
        file().read_exact(offset, stream, "compressed grain data");
    }
    const auto produced = vmdk_inflate(stream, out);
    if (!produced) corrupt(name + " does not inflate (bad deflate data)");
    if (*produced < grain_length(grain))
        corrupt(name + " inflates to " + std::to_string(*produced) + " bytes, expected " +
                std::to_string(grain_length(grain)));
    std::memset(out.data() + *produced, 0, out.size() - *produced);
}

}  // namespace guestfrag
