// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_cowd_extent.hpp"

#include <array>
#include <bit>

#include "core/error.hpp"

namespace guestfrag {
namespace {

constexpr std::uint32_t kMagic = 0x44574f43;  // "COWD" read little-endian
constexpr std::size_t kHeaderBytes = 2048;
constexpr std::uint64_t kMaxGrainSectors = std::uint64_t{1} << 21;

[[noreturn]] void corrupt(const std::string& what) { throw Error(ErrorKind::Corrupt, "cowd " + what); }

}  // namespace

std::uint64_t VmdkCowdHeader::needed_gd_entries() const {
    const std::uint64_t per_table = grain_sectors * kGtesPerGt;
    return (capacity + per_table - 1) / per_table;
}

VmdkCowdHeader read_vmdk_cowd_header(const HostFile& file) {
    if (file.size() < kHeaderBytes)
        corrupt("header: the file has " + std::to_string(file.size()) + " bytes, the header needs 2048");
    std::array<std::byte, kHeaderBytes> s{};
    file.read_exact(0, s, "cowd header");
    if (vmdk_le(s, 0, 4) != kMagic) corrupt("header: bad magic");
    VmdkCowdHeader h;
    h.version = static_cast<std::uint32_t>(vmdk_le(s, 4, 4));
    h.flags = static_cast<std::uint32_t>(vmdk_le(s, 8, 4));
    h.capacity = vmdk_le(s, 12, 4);
    h.grain_sectors = vmdk_le(s, 16, 4);
    h.gd_offset = vmdk_le(s, 20, 4);
    h.gd_entries = vmdk_le(s, 24, 4);
    h.free_sector = vmdk_le(s, 28, 4);
    h.generation = static_cast<std::uint32_t>(vmdk_le(s, 1060, 4));
    h.unclean_shutdown = vmdk_le(s, 1648, 4) != 0;
    if ((h.flags & VmdkCowdHeader::kFlagRoot) == 0) {
        const auto* name = reinterpret_cast<const char*>(s.data() + 32);
        std::size_t length = 0;
        while (length < 1024 && name[length] != '\0') ++length;
        h.parent_file_name.assign(name, length);
    }

    if (h.version != 1)
        throw Error(ErrorKind::Unsupported, "vmdk: cowd version " + std::to_string(h.version) + " is not supported");
    if (h.capacity == 0) corrupt("header: capacity of 0 sectors");
    if (h.grain_sectors == 0 || !std::has_single_bit(h.grain_sectors))
        corrupt("header: grain size of " + std::to_string(h.grain_sectors) + " sectors is not a power of two");
    if (h.grain_sectors > kMaxGrainSectors)
        throw Error(ErrorKind::Unsupported,
                    "vmdk: cowd grains of " + std::to_string(h.grain_sectors) + " sectors are not supported");
    const std::uint64_t needed = h.needed_gd_entries();
    if (h.gd_entries < needed)
        corrupt("header: " + std::to_string(h.gd_entries) + " grain directory entries, the capacity needs " +
                std::to_string(needed));
    if (h.gd_offset < VmdkCowdHeader::kHeaderSectors)
        corrupt("grain directory at sector " + std::to_string(h.gd_offset) + " overlaps the header");
    if (h.gd_offset * kVmdkSectorSize > file.size() || needed * 4 > file.size() - h.gd_offset * kVmdkSectorSize)
        corrupt("grain directory at sector " + std::to_string(h.gd_offset) + " (" + std::to_string(needed) +
                " entries) lies past the end of the file (" + std::to_string(file.size()) + " bytes)");
    return h;
}

VmdkCowdExtent::VmdkCowdExtent(HostFile file, const VmdkCowdHeader& header)
    : VmdkGrainExtent(std::move(file), header.capacity * kVmdkSectorSize, header.grain_sectors * kVmdkSectorSize,
                      VmdkCowdHeader::kGtesPerGt),
      header_(header) {
    const std::uint64_t entries = header_.needed_gd_entries();
    std::vector<std::byte> raw(static_cast<std::size_t>(entries * 4));
    this->file().read_exact(header_.gd_offset * kVmdkSectorSize, raw, "cowd grain directory");
    directory_.resize(static_cast<std::size_t>(entries));
    for (std::size_t i = 0; i < directory_.size(); ++i)
        directory_[i] = static_cast<std::uint32_t>(vmdk_le(raw, i * 4, 4));
    refuse_shared_tables({directory_.begin(), directory_.end()});
}

std::shared_ptr<const VmdkGrainTable> VmdkCowdExtent::load_table(std::uint64_t table) const {
    const std::uint32_t gde = directory_[static_cast<std::size_t>(table)];
    if (gde == 0) return nullptr;
    if (gde < VmdkCowdHeader::kHeaderSectors)
        corrupt("grain directory entry " + std::to_string(table) + ": grain table at sector " + std::to_string(gde) +
                " overlaps the header");
    const std::uint64_t count = grains_in_table(table);
    std::vector<std::byte> raw(static_cast<std::size_t>(count * 4));
    const std::string what = "cowd grain directory entry " + std::to_string(table) + ": grain table";
    file().read_exact(std::uint64_t{gde} * kVmdkSectorSize, raw, what.c_str());
    auto decoded = std::make_shared<VmdkGrainTable>(static_cast<std::size_t>(count));
    const std::uint64_t first_grain = table * VmdkCowdHeader::kGtesPerGt;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t gte = vmdk_le(raw, static_cast<std::size_t>(i * 4), 4);
        if (gte == 0) continue;
        const std::uint64_t offset = gte * kVmdkSectorSize;
        check_stored_grain(table, i, first_grain + i, offset, VmdkCowdHeader::kHeaderSectors * kVmdkSectorSize);
        (*decoded)[static_cast<std::size_t>(i)] = {VmdkGrain::Kind::Data, offset};
    }
    return decoded;
}

}  // namespace guestfrag
