// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vhdx_format.hpp"

#include <algorithm>
#include <bit>
#include <boost/crc.hpp>
#include <cstring>
#include <string_view>

#include "core/error.hpp"

namespace guestfrag::vhdx {
namespace {

using namespace std::string_view_literals;

[[noreturn]] void corrupt(const std::string& what) { throw Error(ErrorKind::Corrupt, "vhdx: " + what); }

bool has_signature(std::span<const std::byte> bytes, std::string_view signature) {
    return bytes.size() >= signature.size() && std::memcmp(bytes.data(), signature.data(), signature.size()) == 0;
}

constexpr Guid make_guid(std::uint32_t d1, std::uint16_t d2, std::uint16_t d3, std::uint64_t d4) {
    Guid g;
    for (int i = 0; i < 4; ++i) g.bytes[static_cast<std::size_t>(i)] = static_cast<std::byte>(d1 >> (8 * i));
    for (int i = 0; i < 2; ++i) g.bytes[static_cast<std::size_t>(4 + i)] = static_cast<std::byte>(d2 >> (8 * i));
    for (int i = 0; i < 2; ++i) g.bytes[static_cast<std::size_t>(6 + i)] = static_cast<std::byte>(d3 >> (8 * i));
    // Data4 is stored as written in the text form: big-endian here.
    for (int i = 0; i < 8; ++i) g.bytes[static_cast<std::size_t>(8 + i)] = static_cast<std::byte>(d4 >> (8 * (7 - i)));
    return g;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string size_text(std::uint64_t bytes) { return std::to_string(bytes); }

/// Entries of the metadata table as recorded, before interpretation.
struct ItemEntry {
    Guid id;
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
    bool is_user = false;
    bool required = false;
};

struct KnownItem {
    const Guid* id;
    const char* name;
    std::uint32_t min_length;
};

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data) {
    boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
    crc.process_bytes(data.data(), data.size());
    return crc.checksum();
}

std::uint32_t crc32c_without(std::span<const std::byte> data, std::size_t field) {
    boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
    constexpr std::byte zeros[4]{};
    crc.process_bytes(data.data(), field);
    crc.process_bytes(zeros, 4);
    crc.process_bytes(data.data() + field + 4, data.size() - field - 4);
    return crc.checksum();
}

std::uint64_t load_le(const std::byte* p, unsigned bytes) {
    std::uint64_t value = 0;
    for (unsigned i = bytes; i-- > 0;) value = (value << 8) | std::to_integer<std::uint64_t>(p[i]);
    return value;
}

Guid Guid::at(const std::byte* p) {
    Guid g;
    std::memcpy(g.bytes.data(), p, g.bytes.size());
    return g;
}

std::optional<Guid> Guid::parse(std::string_view text) {
    if (text.size() == 38 && text.front() == '{' && text.back() == '}') text = text.substr(1, 36);
    if (text.size() != 36) return std::nullopt;
    std::uint64_t fields[5]{};
    const std::size_t starts[5] = {0, 9, 14, 19, 24};
    const std::size_t lengths[5] = {8, 4, 4, 4, 12};
    for (std::size_t f = 0; f < 5; ++f) {
        if (f > 0 && text[starts[f] - 1] != '-') return std::nullopt;
        for (std::size_t i = 0; i < lengths[f]; ++i) {
            const int d = hex_digit(text[starts[f] + i]);
            if (d < 0) return std::nullopt;
            fields[f] = (fields[f] << 4) | static_cast<std::uint64_t>(d);
        }
    }
    return make_guid(static_cast<std::uint32_t>(fields[0]), static_cast<std::uint16_t>(fields[1]),
                     static_cast<std::uint16_t>(fields[2]), (fields[3] << 48) | fields[4]);
}

bool Guid::is_zero() const {
    return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

std::string Guid::text() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    const auto put = [&](std::uint64_t value, int nibbles) {
        for (int i = nibbles - 1; i >= 0; --i) out += digits[(value >> (4 * i)) & 0xf];
    };
    put(load_le(bytes.data(), 4), 8);
    out += '-';
    put(load_le(bytes.data() + 4, 2), 4);
    out += '-';
    put(load_le(bytes.data() + 6, 2), 4);
    out += '-';
    for (std::size_t i = 8; i < 16; ++i) {
        if (i == 10) out += '-';
        put(std::to_integer<std::uint64_t>(bytes[i]), 2);
    }
    return out;
}

namespace guids {
const Guid kBatRegion = make_guid(0x2DC27766, 0xF623, 0x4200, 0x9D64115E9BFD4A08);
const Guid kMetadataRegion = make_guid(0x8B7CA206, 0x4790, 0x4B9A, 0xB8FE575F050F886E);
const Guid kFileParameters = make_guid(0xCAA16737, 0xFA36, 0x4D43, 0xB3B633F0AA44E76B);
const Guid kVirtualDiskSize = make_guid(0x2FA54224, 0xCD1B, 0x4876, 0xB2115DBED83BF4B8);
const Guid kPage83Data = make_guid(0xBECA12AB, 0xB2E6, 0x4523, 0x93EFC309E000C746);
const Guid kLogicalSectorSize = make_guid(0x8141BF1D, 0xA96F, 0x4709, 0xBA47F233A8FAAB5F);
const Guid kPhysicalSectorSize = make_guid(0xCDA348C7, 0x445D, 0x4471, 0x9CC9E9885251C556);
const Guid kParentLocator = make_guid(0xA8D35F2D, 0xB30B, 0x454D, 0xABF7D3D84834AB0C);
const Guid kVhdxParentLocatorType = make_guid(0xB04AEFB7, 0xD19E, 0x4A81, 0xB78925B8E9445913);
}  // namespace guids

std::optional<Header> parse_header(std::span<const std::byte> bytes) {
    if (bytes.size() < kHeaderBytes || !has_signature(bytes, "head"sv)) return std::nullopt;
    const auto block = bytes.first(kHeaderBytes);
    if (crc32c_without(block, 4) != load_le(block.data() + 4, 4)) return std::nullopt;
    Header h;
    h.sequence_number = load_le(block.data() + 8, 8);
    h.file_write_guid = Guid::at(block.data() + 16);
    h.data_write_guid = Guid::at(block.data() + 32);
    h.log_guid = Guid::at(block.data() + 48);
    h.log_version = static_cast<std::uint16_t>(load_le(block.data() + 64, 2));
    h.version = static_cast<std::uint16_t>(load_le(block.data() + 66, 2));
    h.log_length = static_cast<std::uint32_t>(load_le(block.data() + 68, 4));
    h.log_offset = load_le(block.data() + 72, 8);
    return h;
}

Header current_header(const std::optional<Header>& first, const std::optional<Header>& second) {
    if (!first && !second)
        corrupt("neither header (at 64 KiB and 128 KiB) has a valid signature and checksum");
    // The spec: the valid header with the greater sequence number is current.
    const Header& h = !second || (first && first->sequence_number >= second->sequence_number) ? *first : *second;
    if (h.version != 1)
        throw Error(ErrorKind::Unsupported, "vhdx: header version " + std::to_string(h.version) + " is not supported");
    if (h.log_version != 0)
        throw Error(ErrorKind::Unsupported, "vhdx: log version " + std::to_string(h.log_version) + " is not supported");
    if (h.log_length % MiB != 0 || h.log_offset % MiB != 0 || (h.log_length != 0 && h.log_offset < MiB))
        corrupt("log at offset " + std::to_string(h.log_offset) + " (" + size_text(h.log_length) +
                " bytes) is not aligned to 1 MiB");
    return h;
}

std::optional<std::vector<Region>> parse_region_table(std::span<const std::byte> bytes) {
    if (bytes.size() < kRegionTableBytes || !has_signature(bytes, "regi"sv)) return std::nullopt;
    const auto table = bytes.first(kRegionTableBytes);
    if (crc32c_without(table, 4) != load_le(table.data() + 4, 4)) return std::nullopt;
    const std::uint64_t count = load_le(table.data() + 8, 4);
    if (count > 2047) corrupt("region table holds " + std::to_string(count) + " entries (at most 2047)");
    std::vector<Region> regions;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::byte* e = table.data() + 16 + 32 * i;
        Region r;
        r.guid = Guid::at(e);
        r.file_offset = load_le(e + 16, 8);
        r.length = static_cast<std::uint32_t>(load_le(e + 24, 4));
        r.required = (load_le(e + 28, 4) & 1) != 0;
        regions.push_back(r);
    }
    return regions;
}

Regions check_regions(const std::vector<Region>& regions, std::uint64_t file_size) {
    std::optional<Region> bat;
    std::optional<Region> metadata;
    for (const Region& r : regions) {
        const std::string name = r.guid == guids::kBatRegion        ? "the BAT region"
                                 : r.guid == guids::kMetadataRegion ? "the metadata region"
                                                                    : "region {" + r.guid.text() + "}";
        if (r.file_offset % MiB != 0 || r.file_offset < MiB || r.length % MiB != 0 || r.length == 0)
            corrupt(name + " at offset " + std::to_string(r.file_offset) + " (" + size_text(r.length) +
                    " bytes) is not aligned to 1 MiB");
        if (r.file_offset > file_size || r.length > file_size - r.file_offset)
            corrupt(name + " at offset " + std::to_string(r.file_offset) + " (" + size_text(r.length) +
                    " bytes) lies past the end of the file (" + size_text(file_size) + " bytes)");
        for (const Region& other : regions) {
            if (&other == &r) continue;
            if (other.guid == r.guid) corrupt("the region table lists " + name + " twice");
            if (r.file_offset < other.file_offset + other.length && other.file_offset < r.file_offset + r.length)
                corrupt(name + " overlaps region {" + other.guid.text() + "}");
        }
        if (r.guid == guids::kBatRegion) bat = r;
        else if (r.guid == guids::kMetadataRegion) metadata = r;
        else if (r.required)
            throw Error(ErrorKind::Unsupported, "vhdx: required region {" + r.guid.text() + "} is not supported");
    }
    if (!bat) corrupt("the region table has no BAT region");
    if (!metadata) corrupt("the region table has no metadata region");
    return {*bat, *metadata};
}

const std::string* Metadata::locator_value(std::string_view key) const {
    for (const auto& [k, v] : parent_locator)
        if (k == key) return &v;
    return nullptr;
}

std::string utf16le_to_utf8(std::span<const std::byte> bytes) {
    std::string out;
    const std::size_t units = bytes.size() / 2;
    const auto unit = [&](std::size_t i) { return static_cast<std::uint32_t>(load_le(bytes.data() + 2 * i, 2)); };
    for (std::size_t i = 0; i < units; ++i) {
        std::uint32_t cp = unit(i);
        if (cp >= 0xD800 && cp < 0xDC00 && i + 1 < units && unit(i + 1) >= 0xDC00 && unit(i + 1) < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (unit(i + 1) - 0xDC00);
            ++i;
        } else if (cp >= 0xD800 && cp < 0xE000) {
            cp = 0xFFFD;
        }
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    return out;
}

namespace {

std::vector<std::pair<std::string, std::string>> parse_parent_locator(std::span<const std::byte> item) {
    if (item.size() < 20) corrupt("the parent locator is " + size_text(item.size()) + " bytes long (at least 20 expected)");
    const Guid type = Guid::at(item.data());
    if (type != guids::kVhdxParentLocatorType)
        throw Error(ErrorKind::Unsupported, "vhdx: parent locator type {" + type.text() + "} is not supported");
    const std::uint64_t count = load_le(item.data() + 18, 2);
    if (20 + 12 * count > item.size())
        corrupt("the parent locator lists " + std::to_string(count) + " entries but holds only " +
                size_text(item.size()) + " bytes");
    std::vector<std::pair<std::string, std::string>> entries;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::byte* e = item.data() + 20 + 12 * i;
        const std::uint64_t key_offset = load_le(e, 4);
        const std::uint64_t value_offset = load_le(e + 4, 4);
        const std::uint64_t key_length = load_le(e + 8, 2);
        const std::uint64_t value_length = load_le(e + 10, 2);
        if (key_offset + key_length > item.size() || value_offset + value_length > item.size() ||
            key_length % 2 != 0 || value_length % 2 != 0)
            corrupt("parent locator entry " + std::to_string(i) + " lies outside the locator or is not UTF-16");
        entries.emplace_back(utf16le_to_utf8(item.subspan(key_offset, key_length)),
                             utf16le_to_utf8(item.subspan(value_offset, value_length)));
    }
    return entries;
}

}  // namespace

Metadata parse_metadata(std::span<const std::byte> table, std::uint64_t region_length, const ItemReader& read_item) {
    if (table.size() < kMetadataTableBytes || region_length < kMetadataTableBytes || !has_signature(table, "metadata"sv))
        corrupt("the metadata table has no \"metadata\" signature");
    const std::uint64_t count = load_le(table.data() + 10, 2);
    if (count > 2047) corrupt("the metadata table holds " + std::to_string(count) + " entries (at most 2047)");

    std::vector<ItemEntry> items;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::byte* e = table.data() + 32 + 32 * i;
        ItemEntry item;
        item.id = Guid::at(e);
        item.offset = static_cast<std::uint32_t>(load_le(e + 16, 4));
        item.length = static_cast<std::uint32_t>(load_le(e + 20, 4));
        const std::uint64_t flags = load_le(e + 24, 4);
        item.is_user = (flags & 1) != 0;
        item.required = (flags & 4) != 0;
        if (item.length > MiB)
            corrupt("metadata item {" + item.id.text() + "} is " + size_text(item.length) + " bytes long (at most 1 MiB)");
        if (item.length != 0 && (item.offset < kMetadataTableBytes || item.offset + std::uint64_t{item.length} > region_length))
            corrupt("metadata item {" + item.id.text() + "} at offset " + std::to_string(item.offset) +
                    " lies outside the metadata region");
        for (const ItemEntry& other : items)
            if (other.id == item.id && other.is_user == item.is_user)
                corrupt("the metadata table lists item {" + item.id.text() + "} twice");
        items.push_back(item);
    }

    const KnownItem known[] = {
        {&guids::kFileParameters, "file parameters", 8},   {&guids::kVirtualDiskSize, "virtual disk size", 8},
        {&guids::kPage83Data, "page 83 data", 16},         {&guids::kLogicalSectorSize, "logical sector size", 4},
        {&guids::kPhysicalSectorSize, "physical sector size", 4}, {&guids::kParentLocator, "parent locator", 20},
    };
    const auto find = [&](const KnownItem& k) -> std::optional<std::vector<std::byte>> {
        for (const ItemEntry& item : items) {
            if (item.is_user || item.id != *k.id) continue;
            if (item.length < k.min_length)
                corrupt("metadata item " + std::string(k.name) + " is " + size_text(item.length) + " bytes long (" +
                        std::to_string(k.min_length) + " expected)");
            std::vector<std::byte> bytes(item.length);
            read_item(item.offset, bytes);
            return bytes;
        }
        return std::nullopt;
    };
    for (const ItemEntry& item : items) {
        const bool is_known = !item.is_user && std::any_of(std::begin(known), std::end(known),
                                                           [&](const KnownItem& k) { return *k.id == item.id; });
        if (!is_known && item.required)
            throw Error(ErrorKind::Unsupported,
                        "vhdx: required metadata item {" + item.id.text() + "} is not supported");
    }
    const auto need = [&](const KnownItem& k) {
        const auto bytes = find(k);
        if (!bytes) corrupt("metadata item " + std::string(k.name) + " is missing");
        return *bytes;
    };

    Metadata m;
    const std::vector<std::byte> params = need(known[0]);
    m.block_size = static_cast<std::uint32_t>(load_le(params.data(), 4));
    const std::uint64_t flags = load_le(params.data() + 4, 4);
    m.leave_blocks_allocated = (flags & 1) != 0;
    m.has_parent = (flags & 2) != 0;
    if (!std::has_single_bit(m.block_size) || m.block_size < MiB || m.block_size > 256 * MiB)
        corrupt("block size " + size_text(m.block_size) + " is not a power of two between 1 MiB and 256 MiB");

    m.logical_sector_size = static_cast<std::uint32_t>(load_le(need(known[3]).data(), 4));
    if (m.logical_sector_size != 512 && m.logical_sector_size != 4096)
        corrupt("logical sector size " + size_text(m.logical_sector_size) + " is neither 512 nor 4096");
    m.physical_sector_size = static_cast<std::uint32_t>(load_le(need(known[4]).data(), 4));
    if (m.physical_sector_size != 512 && m.physical_sector_size != 4096)
        corrupt("physical sector size " + size_text(m.physical_sector_size) + " is neither 512 nor 4096");

    m.virtual_size = load_le(need(known[1]).data(), 8);
    if (m.virtual_size == 0) corrupt("the virtual disk size is 0");
    if (m.virtual_size > kMaxVirtualSize)
        corrupt("virtual disk size " + size_text(m.virtual_size) + " exceeds the format's limit of 64 TiB");
    if (m.virtual_size % m.logical_sector_size != 0)
        corrupt("virtual disk size " + size_text(m.virtual_size) + " is not a multiple of the logical sector size " +
                std::to_string(m.logical_sector_size));

    if (const auto page83 = find(known[2])) m.page83 = Guid::at(page83->data());
    if (m.has_parent) m.parent_locator = parse_parent_locator(need(known[5]));
    return m;
}

}  // namespace guestfrag::vhdx
