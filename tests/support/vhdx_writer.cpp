// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/vhdx_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/crc.hpp>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace guestfrag::test {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t kLogLength = MiB;
constexpr std::uint64_t kLogOffset = MiB;
constexpr std::uint64_t kMetadataOffset = 2 * MiB;
constexpr std::uint64_t kBatOffset = 3 * MiB;
constexpr const char* kLogGuid = "10a90000-1111-4222-8333-444455556666";

using Bytes = std::vector<std::byte>;

void put(Bytes& b, std::size_t at, std::uint64_t value, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i) b[at + i] = static_cast<std::byte>(value >> (8 * i));
}
void put_text(Bytes& b, std::size_t at, const char* text) {
    std::memcpy(b.data() + at, text, std::strlen(text));
}

/// "8-4-4-4-12" (optionally braced) → the 16 bytes in Windows order.
std::array<std::byte, 16> guid_bytes(std::string text) {
    if (!text.empty() && text.front() == '{') text = text.substr(1, text.size() - 2);
    text.erase(std::remove(text.begin(), text.end(), '-'), text.end());
    if (text.size() != 32) throw std::invalid_argument("bad guid " + text);
    std::array<std::byte, 16> raw{};
    for (std::size_t i = 0; i < 16; ++i) raw[i] = static_cast<std::byte>(std::stoul(text.substr(2 * i, 2), nullptr, 16));
    // The first three fields are stored little-endian.
    std::reverse(raw.begin(), raw.begin() + 4);
    std::reverse(raw.begin() + 4, raw.begin() + 6);
    std::reverse(raw.begin() + 6, raw.begin() + 8);
    return raw;
}
void put_guid(Bytes& b, std::size_t at, const std::string& text) {
    const auto raw = guid_bytes(text);
    std::memcpy(b.data() + at, raw.data(), raw.size());
}

Bytes utf16(const std::string& text) {
    Bytes out;
    for (const unsigned char c : text) {  // the tests use ASCII
        out.push_back(static_cast<std::byte>(c));
        out.push_back(std::byte{0});
    }
    return out;
}

std::uint32_t crc_with_zero_field(std::span<const std::byte> data, std::size_t field) {
    boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
    Bytes copy(data.begin(), data.end());
    std::memset(copy.data() + field, 0, 4);
    crc.process_bytes(copy.data(), copy.size());
    return crc.checksum();
}

void seal(Bytes& b, std::size_t field) { put(b, field, crc_with_zero_field(b, field), 4); }

std::uint64_t round_up(std::uint64_t x, std::uint64_t to) { return (x + to - 1) / to * to; }

}  // namespace

std::uint32_t vhdx_test_crc(std::span<const std::byte> data, std::size_t field) {
    return crc_with_zero_field(data, field);
}

VhdxWriter::VhdxWriter(VhdxSpec spec) : spec_(std::move(spec)) {}

std::uint64_t VhdxWriter::chunk_ratio() const {
    return (std::uint64_t{1} << 23) * spec_.logical_sector_size / spec_.block_size;
}
std::uint64_t VhdxWriter::blocks() const { return (spec_.virtual_size + spec_.block_size - 1) / spec_.block_size; }
std::uint64_t VhdxWriter::payload_index(std::uint64_t block) const { return block + block / chunk_ratio(); }
std::uint64_t VhdxWriter::bitmap_index(std::uint64_t chunk) const { return chunk * (chunk_ratio() + 1) + chunk_ratio(); }

VhdxWriter::Block& VhdxWriter::stored(std::uint64_t block) {
    Block& b = blocks_[block];
    if (b.data.empty()) {
        b.data.assign(spec_.block_size, spec_.filler);
        b.bits.assign(spec_.block_size / spec_.logical_sector_size, false);
    }
    return b;
}

void VhdxWriter::write(std::uint64_t offset, std::span<const std::byte> data) {
    const std::uint64_t sector = spec_.logical_sector_size;
    if (offset % sector != 0 || data.size() % sector != 0 || offset + data.size() > spec_.virtual_size)
        throw std::invalid_argument("vhdx writer: unaligned or out-of-range write");
    for (std::uint64_t done = 0; done < data.size();) {
        const std::uint64_t at = offset + done;
        const std::uint64_t block = at / spec_.block_size;
        const std::uint64_t in_block = at % spec_.block_size;
        const std::uint64_t n = std::min<std::uint64_t>(data.size() - done, spec_.block_size - in_block);
        Block& b = stored(block);
        std::memcpy(b.data.data() + in_block, data.data() + done, n);
        for (std::uint64_t s = in_block / sector; s < (in_block + n) / sector; ++s) b.bits[s] = true;
        if (b.state != VhdxState::FullyPresent) {
            if (spec_.has_parent) b.state = VhdxState::PartiallyPresent;
            else set_state(block, VhdxState::FullyPresent);  // zeros where nothing was written
        }
        done += n;
    }
}

void VhdxWriter::set_state(std::uint64_t block, VhdxState state) {
    if (state == VhdxState::FullyPresent || state == VhdxState::PartiallyPresent) {
        Block& b = stored(block);
        // A block that becomes fully present holds zeros where nothing was written.
        if (state == VhdxState::FullyPresent && b.state != VhdxState::FullyPresent)
            for (std::size_t s = 0; s < b.bits.size(); ++s)
                if (!b.bits[s])
                    std::memset(b.data.data() + s * spec_.logical_sector_size, 0, spec_.logical_sector_size);
        b.state = state;
    } else {
        blocks_[block] = Block{state, {}, {}};
    }
}

VhdxLayout VhdxWriter::layout() const {
    VhdxLayout l;
    l.log_offset = kLogOffset;
    l.metadata_offset = kMetadataOffset;
    l.bat_offset = kBatOffset;
    const std::uint64_t chunks = (blocks() + chunk_ratio() - 1) / chunk_ratio();
    const std::uint64_t entries =
        spec_.has_parent ? chunks * (chunk_ratio() + 1) : blocks() + (blocks() - 1) / chunk_ratio();
    l.bat_length = round_up(entries * 8, MiB);
    std::uint64_t next = kBatOffset + l.bat_length + spec_.extra_regions.size() * MiB;
    for (const auto& [block, b] : blocks_)
        if (b.state == VhdxState::PartiallyPresent && !l.bitmap_offsets.contains(block / chunk_ratio())) {
            l.bitmap_offsets[block / chunk_ratio()] = next;
            next += MiB;
        }
    next = round_up(next, MiB);
    for (const auto& [block, b] : blocks_)
        if (b.state == VhdxState::FullyPresent || b.state == VhdxState::PartiallyPresent) {
            l.block_offsets[block] = next;
            next += spec_.block_size;
        }
    l.file_size = next;
    return l;
}

VhdxLayout VhdxWriter::save(const std::filesystem::path& path) const {
    const VhdxLayout l = layout();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) throw std::runtime_error("vhdx writer: cannot create " + path.string());
    const auto write_at = [&](std::uint64_t offset, const Bytes& bytes) {
        if (::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)) != static_cast<ssize_t>(bytes.size()))
            throw std::runtime_error("vhdx writer: write failed");
    };
    if (::ftruncate(fd, static_cast<off_t>(l.file_size)) != 0) throw std::runtime_error("vhdx writer: truncate failed");

    // File type identifier.
    Bytes ident(64 * KiB);
    put_text(ident, 0, "vhdxfile");
    const Bytes creator = utf16("guestfrag test writer");
    std::memcpy(ident.data() + 8, creator.data(), creator.size());
    write_at(0, ident);

    // Log: the entries as one sequence from the start of the log, each tail at the first.
    const bool logged = !spec_.log.empty();
    Bytes log(kLogLength);
    std::uint64_t log_pos = 0;
    for (std::size_t i = 0; i < spec_.log.size(); ++i) {
        const VhdxLogEntry& entry = spec_.log[i];
        const std::uint64_t sequence = 0x1000 + i;
        const std::uint64_t descriptors = entry.zeros.size() + entry.writes.size();
        const std::uint64_t descriptor_sectors = (64 + 32 * descriptors + 4095) / 4096;
        const std::uint64_t length = (descriptor_sectors + entry.writes.size()) * 4096;
        Bytes e(length);
        put_text(e, 0, "loge");
        put(e, 8, length, 4);
        put(e, 12, 0, 4);  // tail: the first entry
        put(e, 16, sequence, 8);
        put(e, 24, descriptors, 4);
        put_guid(e, 32, kLogGuid);
        put(e, 48, l.file_size, 8);
        put(e, 56, l.file_size, 8);
        std::size_t d = 64;
        for (const VhdxLogZero& z : entry.zeros) {
            put_text(e, d, "zero");
            put(e, d + 8, z.length, 8);
            put(e, d + 16, z.file_offset, 8);
            put(e, d + 24, sequence, 8);
            d += 32;
        }
        for (std::size_t w = 0; w < entry.writes.size(); ++w) {
            const Bytes& s = entry.writes[w].sector;
            put_text(e, d, "desc");
            std::memcpy(e.data() + d + 4, s.data() + 4092, 4);  // trailing bytes
            std::memcpy(e.data() + d + 8, s.data(), 8);         // leading bytes
            put(e, d + 16, entry.writes[w].file_offset, 8);
            put(e, d + 24, sequence, 8);
            d += 32;
            const std::size_t at = static_cast<std::size_t>((descriptor_sectors + w) * 4096);
            put_text(e, at, "data");
            put(e, at + 4, sequence >> 32, 4);
            std::memcpy(e.data() + at + 8, s.data() + 8, 4084);
            put(e, at + 4092, sequence & 0xffffffff, 4);
        }
        seal(e, 4);
        std::memcpy(log.data() + log_pos, e.data(), e.size());
        log_pos += length;
    }
    write_at(kLogOffset, log);

    // Headers: two identical ones but for the sequence number.
    for (int i = 0; i < 2; ++i) {
        Bytes h(4 * KiB);
        put_text(h, 0, "head");
        put(h, 8, 10 + static_cast<std::uint64_t>(i), 8);
        put_guid(h, 16, spec_.file_write_guid);
        put_guid(h, 32, spec_.data_write_guid);
        if (logged) put_guid(h, 48, kLogGuid);
        put(h, 64, 0, 2);
        put(h, 66, 1, 2);
        put(h, 68, kLogLength, 4);
        put(h, 72, kLogOffset, 8);
        seal(h, 4);
        write_at((64 + 64 * static_cast<std::uint64_t>(i)) * KiB, h);
    }

    // Region table, twice.
    Bytes regions(64 * KiB);
    put_text(regions, 0, "regi");
    put(regions, 8, 2 + spec_.extra_regions.size(), 4);
    put_guid(regions, 16, "2dc27766-f623-4200-9d64-115e9bfd4a08");
    put(regions, 32, kBatOffset, 8);
    put(regions, 40, l.bat_length, 4);
    put(regions, 44, 1, 4);
    put_guid(regions, 48, "8b7ca206-4790-4b9a-b8fe-575f050f886e");
    put(regions, 64, kMetadataOffset, 8);
    put(regions, 72, MiB, 4);
    put(regions, 76, 1, 4);
    for (std::size_t i = 0; i < spec_.extra_regions.size(); ++i) {
        const std::size_t at = 80 + 32 * i;
        put_guid(regions, at, spec_.extra_regions[i].guid);
        put(regions, at + 16, kBatOffset + l.bat_length + i * MiB, 8);
        put(regions, at + 24, MiB, 4);
        put(regions, at + 28, spec_.extra_regions[i].required ? 1 : 0, 4);
    }
    seal(regions, 4);
    write_at(192 * KiB, regions);
    write_at(256 * KiB, regions);

    // Metadata: table, then the items from 64 KiB on.
    struct Item {
        std::string guid;
        Bytes data;
        std::uint32_t flags;
    };
    std::vector<Item> items;
    Bytes params(8);
    put(params, 0, spec_.block_size, 4);
    put(params, 4, spec_.has_parent ? 2 : 0, 4);
    items.push_back({"caa16737-fa36-4d43-b3b6-33f0aa44e76b", params, 4});
    Bytes size(8);
    put(size, 0, spec_.virtual_size, 8);
    items.push_back({"2fa54224-cd1b-4876-b211-5dbed83bf4b8", size, 6});
    Bytes logical(4);
    put(logical, 0, spec_.logical_sector_size, 4);
    items.push_back({"8141bf1d-a96f-4709-ba47-f233a8faab5f", logical, 6});
    Bytes physical(4);
    put(physical, 0, spec_.physical_sector_size, 4);
    items.push_back({"cda348c7-445d-4471-9cc9-e9885251c556", physical, 6});
    Bytes page83(16);
    put_guid(page83, 0, "0badcafe-1234-4567-89ab-cdef01234567");
    items.push_back({"beca12ab-b2e6-4523-93ef-c309e000c746", page83, 6});
    if (spec_.has_parent) {
        const std::size_t n = spec_.parent_locator.size();
        Bytes locator(20 + 12 * n);
        put_guid(locator, 0, spec_.locator_type);
        put(locator, 18, n, 2);
        for (std::size_t i = 0; i < n; ++i) {
            const Bytes key = utf16(spec_.parent_locator[i].first);
            const Bytes value = utf16(spec_.parent_locator[i].second);
            put(locator, 20 + 12 * i, locator.size(), 4);
            put(locator, 20 + 12 * i + 4, locator.size() + key.size(), 4);
            put(locator, 20 + 12 * i + 8, key.size(), 2);
            put(locator, 20 + 12 * i + 10, value.size(), 2);
            locator.insert(locator.end(), key.begin(), key.end());
            locator.insert(locator.end(), value.begin(), value.end());
        }
        items.push_back({"a8d35f2d-b30b-454d-abf7-d3d84834ab0c", locator, 4});
    }
    for (const VhdxExtraItem& extra : spec_.extra_metadata)
        items.push_back({extra.guid, extra.data, extra.required ? 4u : 0u});
    Bytes metadata(MiB);
    put_text(metadata, 0, "metadata");
    put(metadata, 10, items.size(), 2);
    std::uint64_t item_at = 64 * KiB;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::size_t at = 32 + 32 * i;
        put_guid(metadata, at, items[i].guid);
        put(metadata, at + 16, item_at, 4);
        put(metadata, at + 20, items[i].data.size(), 4);
        put(metadata, at + 24, items[i].flags, 4);
        std::memcpy(metadata.data() + item_at, items[i].data.data(), items[i].data.size());
        item_at += round_up(items[i].data.size(), 8);
    }
    write_at(kMetadataOffset, metadata);

    // BAT, sector bitmaps and blocks.
    Bytes bat(l.bat_length);
    for (const auto& [chunk, offset] : l.bitmap_offsets) put(bat, bitmap_index(chunk) * 8, 6 | offset, 8);
    for (const auto& [block, b] : blocks_) {
        const auto it = l.block_offsets.find(block);
        put(bat, payload_index(block) * 8, static_cast<std::uint64_t>(b.state) | (it != l.block_offsets.end() ? it->second : 0), 8);
    }
    write_at(kBatOffset, bat);
    for (const auto& [chunk, offset] : l.bitmap_offsets) {
        Bytes bits(MiB);
        const std::uint64_t per_block = spec_.block_size / spec_.logical_sector_size;
        for (const auto& [block, b] : blocks_) {
            if (block / chunk_ratio() != chunk || b.state != VhdxState::PartiallyPresent) continue;
            for (std::uint64_t s = 0; s < per_block; ++s)
                if (b.bits[s]) {
                    const std::uint64_t bit = (block % chunk_ratio()) * per_block + s;
                    bits[bit / 8] |= static_cast<std::byte>(1u << (bit % 8));
                }
        }
        write_at(offset, bits);
    }
    for (const auto& [block, offset] : l.block_offsets) write_at(offset, blocks_.at(block).data);
    ::close(fd);
    return l;
}

std::string vhdx_data_write_guid(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::array<unsigned char, 48> h1{}, h2{};
    in.seekg(64 * 1024);
    in.read(reinterpret_cast<char*>(h1.data()), 48);
    in.seekg(128 * 1024);
    in.read(reinterpret_cast<char*>(h2.data()), 48);
    const auto seq = [](const std::array<unsigned char, 48>& h) {
        std::uint64_t v = 0;
        for (int i = 7; i >= 0; --i) v = (v << 8) | h[8 + static_cast<std::size_t>(i)];
        return v;
    };
    const auto& h = seq(h2) > seq(h1) ? h2 : h1;
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    const int order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
        const unsigned char b = h[32 + static_cast<std::size_t>(order[i])];
        text += digits[b >> 4];
        text += digits[b & 15];
    }
    return text;
}

}  // namespace guestfrag::test
