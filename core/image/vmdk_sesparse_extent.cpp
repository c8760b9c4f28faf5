// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_sesparse_extent.hpp"

#include <array>
#include <sstream>

#include "core/error.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kTypeMask = 0xf000000000000000ull;
constexpr std::uint64_t kGdeAllocated = 0x10000000ull;  // top 32 bits of an allocated directory entry

[[noreturn]] void corrupt(const std::string& what) { throw Error(ErrorKind::Corrupt, "sesparse " + what); }

std::string hex(std::uint64_t value) {
    std::ostringstream out;
    out << "0x" << std::hex << value;
    return out.str();
}

}  // namespace

std::uint64_t VmdkSeSparseHeader::needed_gd_entries() const {
    const std::uint64_t per_table = kGrainSectors * kGtesPerGt;
    return (capacity + per_table - 1) / per_table;
}

VmdkSeSparseHeader read_vmdk_sesparse_header(const HostFile& file) {
    std::array<std::byte, kVmdkSectorSize> s{};
    file.read_exact(0, s, "sesparse constant header");
    if (vmdk_le(s, 0, 8) != VmdkSeSparseHeader::kConstMagic) corrupt("constant header: bad magic");
    const std::uint64_t version = vmdk_le(s, 8, 8);
    if (version != VmdkSeSparseHeader::kVersion)
        throw Error(ErrorKind::Unsupported, "vmdk: sesparse version " + std::to_string(version >> 32) + "." +
                                                std::to_string(version & 0xffffffffu) + " is not supported");
    VmdkSeSparseHeader h;
    h.capacity = vmdk_le(s, 16, 8);
    const std::uint64_t grain_size = vmdk_le(s, 24, 8);
    const std::uint64_t grain_table_size = vmdk_le(s, 32, 8);
    const std::uint64_t flags = vmdk_le(s, 40, 8);
    if (grain_size != VmdkSeSparseHeader::kGrainSectors)
        throw Error(ErrorKind::Unsupported,
                    "vmdk: sesparse grains of " + std::to_string(grain_size) + " sectors are not supported");
    if (grain_table_size != VmdkSeSparseHeader::kGrainTableSectors)
        throw Error(ErrorKind::Unsupported, "vmdk: sesparse grain tables of " + std::to_string(grain_table_size) +
                                                " sectors are not supported");
    if (flags != 0) throw Error(ErrorKind::Unsupported, "vmdk: sesparse flags " + hex(flags) + " are not supported");
    for (std::size_t at = 48; at < 80; at += 8)
        if (vmdk_le(s, at, 8) != 0)
            throw Error(ErrorKind::Unsupported, "vmdk: sesparse reserved header fields in use are not supported");
    h.volatile_header_offset = vmdk_le(s, 80, 8);
    h.journal_header_offset = vmdk_le(s, 96, 8);
    h.journal_header_size = vmdk_le(s, 104, 8);
    h.journal_offset = vmdk_le(s, 112, 8);
    h.journal_size = vmdk_le(s, 120, 8);
    h.grain_dir_offset = vmdk_le(s, 128, 8);
    h.grain_dir_size = vmdk_le(s, 136, 8);
    h.grain_tables_offset = vmdk_le(s, 144, 8);
    h.grain_tables_size = vmdk_le(s, 152, 8);
    h.free_bitmap_offset = vmdk_le(s, 160, 8);
    h.free_bitmap_size = vmdk_le(s, 168, 8);
    h.backmap_offset = vmdk_le(s, 176, 8);
    h.backmap_size = vmdk_le(s, 184, 8);
    h.grains_offset = vmdk_le(s, 192, 8);
    h.grains_size = vmdk_le(s, 200, 8);

    // Bounding the areas keeps every offset computed from them far from overflowing.
    constexpr std::uint64_t kMaxArea = std::uint64_t{1} << 40;
    for (const std::uint64_t value : {h.grain_dir_offset, h.grain_dir_size, h.grain_tables_offset,
                                      h.grain_tables_size, h.grains_offset, h.grains_size})
        if (value > kMaxArea) corrupt("constant header: area offset or size " + std::to_string(value) + " is absurd");
    if (h.capacity == 0) corrupt("constant header: capacity of 0 sectors");
    if (h.capacity > kVmdkMaxDiskBytes / kVmdkSectorSize)
        throw Error(ErrorKind::Unsupported, "vmdk: a capacity of " + std::to_string(h.capacity) +
                                                " sectors exceeds the 64 TiB limit");
    const std::uint64_t sectors = file.size() / kVmdkSectorSize;
    if (h.volatile_header_offset == 0 || h.volatile_header_offset >= sectors)
        corrupt("volatile header at sector " + std::to_string(h.volatile_header_offset) +
                " is not inside the file (" + std::to_string(file.size()) + " bytes)");
    std::array<std::byte, kVmdkSectorSize> v{};
    file.read_exact(h.volatile_header_offset * kVmdkSectorSize, v, "sesparse volatile header");
    if (vmdk_le(v, 0, 8) != VmdkSeSparseHeader::kVolatileMagic) corrupt("volatile header: bad magic");
    if (vmdk_le(v, 24, 8) != 0)
        throw Error(ErrorKind::Unsupported,
                    "vmdk: replaying a sesparse journal (the disk was not closed cleanly) is not supported");

    const std::uint64_t needed = h.needed_gd_entries();
    if (h.grain_dir_size * kVmdkSectorSize / 8 < needed)
        corrupt("grain directory of " + std::to_string(h.grain_dir_size) + " sectors does not cover the capacity");
    if (h.grain_dir_offset == 0 || h.grain_dir_offset > sectors ||
        needed * 8 > file.size() - h.grain_dir_offset * kVmdkSectorSize)
        corrupt("grain directory at sector " + std::to_string(h.grain_dir_offset) + " (" + std::to_string(needed) +
                " entries) is not inside the file (" + std::to_string(file.size()) + " bytes)");
    if (h.grain_tables_offset == 0 || h.grains_offset == 0)
        corrupt("constant header: grain table or grain area at sector 0");
    return h;
}

VmdkSeSparseExtent::VmdkSeSparseExtent(HostFile file, const VmdkSeSparseHeader& header)
    : VmdkGrainExtent(std::move(file), header.capacity * kVmdkSectorSize,
                      VmdkSeSparseHeader::kGrainSectors * kVmdkSectorSize, VmdkSeSparseHeader::kGtesPerGt),
      header_(header) {
    const std::uint64_t entries = header_.needed_gd_entries();
    std::vector<std::byte> raw(static_cast<std::size_t>(entries * 8));
    this->file().read_exact(header_.grain_dir_offset * kVmdkSectorSize, raw, "sesparse grain directory");
    directory_.resize(static_cast<std::size_t>(entries));
    for (std::size_t i = 0; i < directory_.size(); ++i) directory_[i] = vmdk_le(raw, i * 8, 8);
    // Other entry types name no table; load_table refuses them when they are reached.
    std::vector<std::uint64_t> tables(directory_.size());
    for (std::size_t i = 0; i < tables.size(); ++i)
        tables[i] = (directory_[i] >> 32) == kGdeAllocated ? directory_[i] : 0;
    refuse_shared_tables(tables);
}

std::shared_ptr<const VmdkGrainTable> VmdkSeSparseExtent::load_table(std::uint64_t table) const {
    const std::uint64_t gde = directory_[static_cast<std::size_t>(table)];
    if (gde == 0) return nullptr;
    const std::string entry = "grain directory entry " + std::to_string(table);
    // Tables are numbered within the grain table area; the top 32 bits flag "allocated".
    if ((gde >> 32) != kGdeAllocated) corrupt(entry + ": " + hex(gde) + " is not a grain table reference");
    const std::uint64_t index = gde & 0xffffffffu;
    if ((index + 1) * VmdkSeSparseHeader::kGrainTableSectors > header_.grain_tables_size)
        corrupt(entry + ": grain table " + std::to_string(index) + " lies outside the grain table area (" +
                std::to_string(header_.grain_tables_size) + " sectors)");
    const std::uint64_t count = grains_in_table(table);
    std::vector<std::byte> raw(static_cast<std::size_t>(count * 8));
    const std::string what = "sesparse " + entry + ": grain table";
    file().read_exact((header_.grain_tables_offset + index * VmdkSeSparseHeader::kGrainTableSectors) * kVmdkSectorSize,
                      raw, what.c_str());
    auto decoded = std::make_shared<VmdkGrainTable>(static_cast<std::size_t>(count));
    const std::uint64_t first_grain = table * VmdkSeSparseHeader::kGtesPerGt;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t gte = vmdk_le(raw, static_cast<std::size_t>(i * 8), 8);
        VmdkGrain& g = (*decoded)[static_cast<std::size_t>(i)];
        const auto bad = [&](const std::string& why) {
            corrupt("grain table " + std::to_string(table) + " entry " + std::to_string(i) + ": " + hex(gte) + " " + why);
        };
        switch (gte & kTypeMask) {
            case 0x0000000000000000ull:
                if (gte != 0) bad("is an unallocated entry with stray bits");
                break;
            case 0x1000000000000000ull:  // unmapped (guest TRIM/UNMAP): reads as zeros
            case 0x2000000000000000ull:  // zero
                g.kind = VmdkGrain::Kind::Zero;
                break;
            case 0x3000000000000000ull: {
                const std::uint64_t grain_index = ((gte & 0x0fff000000000000ull) >> 48) | ((gte & 0x0000ffffffffffffull) << 12);
                if ((grain_index + 1) * VmdkSeSparseHeader::kGrainSectors > header_.grains_size)
                    bad("names grain " + std::to_string(grain_index) + ", outside the grain area (" +
                        std::to_string(header_.grains_size) + " sectors)");
                const std::uint64_t offset =
                    (header_.grains_offset + grain_index * VmdkSeSparseHeader::kGrainSectors) * kVmdkSectorSize;
                check_stored_grain(table, i, first_grain + i, offset, kVmdkSectorSize);
                g = {VmdkGrain::Kind::Data, offset};
                break;
            }
            default: bad("has an unknown grain type");
        }
    }
    return decoded;
}

}  // namespace guestfrag
