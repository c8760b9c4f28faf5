// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vhd_format.hpp"

#include <algorithm>
#include <bit>
#include <string_view>

#include "core/error.hpp"

namespace guestfrag::vhd {
namespace {

std::uint32_t be32(std::span<const std::byte> bytes, std::size_t offset) {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i)
        value = (value << 8) | std::to_integer<std::uint32_t>(bytes[offset + i]);
    return value;
}

std::uint64_t be64(std::span<const std::byte> bytes, std::size_t offset) {
    return (std::uint64_t{be32(bytes, offset)} << 32) | be32(bytes, offset + 4);
}

Guid guid_at(std::span<const std::byte> bytes, std::size_t offset) {
    Guid id{};
    for (std::size_t i = 0; i < id.size(); ++i) id[i] = std::to_integer<std::uint8_t>(bytes[offset + i]);
    return id;
}

bool has_cookie(std::span<const std::byte> bytes, std::string_view cookie) {
    return std::equal(cookie.begin(), cookie.end(), bytes.begin(),
                      [](char c, std::byte b) { return static_cast<std::byte>(c) == b; });
}

std::string hex32(std::uint32_t value) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) text += digits[(value >> shift) & 0xf];
    return text;
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

// Footer and dynamic header field offsets (specification, "Hard Disk Footer Format" and
// "Dynamic Disk Header Format").
constexpr std::size_t kFooterVersion = 12;
constexpr std::size_t kFooterDataOffset = 16;
constexpr std::size_t kFooterCurrentSize = 48;
constexpr std::size_t kFooterDiskType = 60;
constexpr std::size_t kFooterChecksum = 64;
constexpr std::size_t kFooterUniqueId = 68;

constexpr std::size_t kHeaderTableOffset = 16;
constexpr std::size_t kHeaderVersion = 24;
constexpr std::size_t kHeaderMaxEntries = 28;
constexpr std::size_t kHeaderBlockSize = 32;
constexpr std::size_t kHeaderChecksum = 36;
constexpr std::size_t kHeaderParentId = 40;
constexpr std::size_t kHeaderParentName = 64;
constexpr std::size_t kHeaderParentNameSize = 512;
constexpr std::size_t kHeaderLocators = 576;
constexpr std::size_t kLocatorEntrySize = 24;

constexpr std::uint32_t kVersion1 = 0x00010000;

}  // namespace

std::uint32_t checksum(std::span<const std::byte> bytes, std::size_t checksum_offset) noexcept {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i)
        if (i < checksum_offset || i >= checksum_offset + 4) sum += std::to_integer<std::uint32_t>(bytes[i]);
    return ~sum;
}

Footer parse_footer(std::span<const std::byte, kFooterSize> bytes) {
    if (!has_cookie(bytes, "conectix"))
        throw Error(ErrorKind::Corrupt, "vhd: footer has no \"conectix\" cookie");
    const std::uint32_t stored = be32(bytes, kFooterChecksum);
    const std::uint32_t computed = checksum(bytes, kFooterChecksum);
    if (stored != computed)
        throw Error(ErrorKind::Corrupt, "vhd: footer checksum mismatch (stored " + hex32(stored) +
                                            ", computed " + hex32(computed) + ")");
    // Only the major half of the version decides the layout.
    const std::uint32_t version = be32(bytes, kFooterVersion);
    if ((version >> 16) != (kVersion1 >> 16))
        throw Error(ErrorKind::Unsupported, "vhd: file format version " + std::to_string(version >> 16) +
                                                "." + std::to_string(version & 0xffff) + " is not supported");

    Footer footer;
    footer.data_offset = be64(bytes, kFooterDataOffset);
    footer.current_size = be64(bytes, kFooterCurrentSize);
    footer.unique_id = guid_at(bytes, kFooterUniqueId);
    const std::uint32_t type = be32(bytes, kFooterDiskType);
    if (type < 2 || type > 4)
        throw Error(ErrorKind::Unsupported, "vhd: disk type " + std::to_string(type) + " is not supported");
    footer.disk_type = static_cast<DiskType>(type);

    if (footer.current_size > kMaxVirtualSize)
        throw Error(ErrorKind::Corrupt, "vhd: virtual size " + std::to_string(footer.current_size) +
                                            " bytes is larger than 64 TiB");
    if (footer.current_size % kSectorSize != 0)
        throw Error(ErrorKind::Corrupt, "vhd: virtual size " + std::to_string(footer.current_size) +
                                            " bytes is not a multiple of 512");
    return footer;
}

DynamicHeader parse_dynamic_header(std::span<const std::byte, kDynamicHeaderSize> bytes,
                                   std::uint64_t virtual_size) {
    if (!has_cookie(bytes, "cxsparse"))
        throw Error(ErrorKind::Corrupt, "vhd: dynamic disk header has no \"cxsparse\" cookie");
    const std::uint32_t stored = be32(bytes, kHeaderChecksum);
    const std::uint32_t computed = checksum(bytes, kHeaderChecksum);
    if (stored != computed)
        throw Error(ErrorKind::Corrupt, "vhd: dynamic disk header checksum mismatch (stored " +
                                            hex32(stored) + ", computed " + hex32(computed) + ")");
    const std::uint32_t version = be32(bytes, kHeaderVersion);
    if ((version >> 16) != (kVersion1 >> 16))
        throw Error(ErrorKind::Unsupported, "vhd: dynamic disk header version " +
                                                std::to_string(version >> 16) + "." +
                                                std::to_string(version & 0xffff) + " is not supported");

    DynamicHeader header;
    header.table_offset = be64(bytes, kHeaderTableOffset);
    header.max_table_entries = be32(bytes, kHeaderMaxEntries);
    header.block_size = be32(bytes, kHeaderBlockSize);
    header.parent_id = guid_at(bytes, kHeaderParentId);
    header.parent_name = utf16_to_utf8(bytes.subspan(kHeaderParentName, kHeaderParentNameSize), true);
    for (std::size_t i = 0; i < kLocatorCount; ++i) {
        const std::size_t at = kHeaderLocators + i * kLocatorEntrySize;
        // The "platform data space" field (at + 4) only reserves room; the length is what
        // holds the path, so the space is not needed.
        header.locators[i] = Locator{be32(bytes, at), be32(bytes, at + 8), be64(bytes, at + 16)};
    }

    // Blocks are whole sectors with a bitmap of one bit per sector in front of them.
    if (header.block_size < kSectorSize || !std::has_single_bit(header.block_size))
        throw Error(ErrorKind::Corrupt, "vhd: block size " + std::to_string(header.block_size) +
                                            " is not a power of two of at least 512 bytes");
    if (std::uint64_t{header.max_table_entries} * header.block_size < virtual_size)
        throw Error(ErrorKind::Corrupt, "vhd: block allocation table has " +
                                            std::to_string(header.max_table_entries) + " entries of " +
                                            std::to_string(header.block_size) + " bytes, too few for a " +
                                            std::to_string(virtual_size) + "-byte disk");
    return header;
}

std::string guid_text(const Guid& id) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    for (std::size_t i = 0; i < id.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
        text += digits[id[i] >> 4];
        text += digits[id[i] & 0xf];
    }
    return text;
}

std::string utf16_to_utf8(std::span<const std::byte> bytes, bool big_endian) {
    std::string out;
    const auto unit = [&](std::size_t i) -> std::uint32_t {
        const auto a = std::to_integer<std::uint32_t>(bytes[2 * i]);
        const auto b = std::to_integer<std::uint32_t>(bytes[2 * i + 1]);
        return big_endian ? (a << 8) | b : (b << 8) | a;
    };
    const std::size_t units = bytes.size() / 2;
    for (std::size_t i = 0; i < units; ++i) {
        const std::uint32_t u = unit(i);
        if (u == 0) break;
        if (u >= 0xd800 && u < 0xdc00 && i + 1 < units) {
            const std::uint32_t low = unit(i + 1);
            if (low >= 0xdc00 && low < 0xe000) {
                append_utf8(out, 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00));
                ++i;
                continue;
            }
        }
        append_utf8(out, u >= 0xd800 && u < 0xe000 ? 0xfffd : u);
    }
    return out;
}

}  // namespace guestfrag::vhd
