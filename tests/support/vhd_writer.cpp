// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/vhd_writer.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace guestfrag::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kSector = 512;

std::uint64_t round_up(std::uint64_t v, std::uint64_t unit) { return (v + unit - 1) / unit * unit; }

void put_be(std::vector<std::byte>& buf, std::size_t at, std::uint64_t value, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) {
        buf.at(at + static_cast<std::size_t>(i)) = static_cast<std::byte>(value & 0xff);
        value >>= 8;
    }
}

void put_text(std::vector<std::byte>& buf, std::size_t at, const char* text) {
    for (std::size_t i = 0; text[i] != '\0'; ++i) buf.at(at + i) = static_cast<std::byte>(text[i]);
}

std::uint32_t sum_except(const std::vector<std::byte>& buf, std::size_t field) {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < buf.size(); ++i)
        if (i < field || i >= field + 4) sum += std::to_integer<std::uint32_t>(buf[i]);
    return ~sum;
}

std::vector<std::byte> read_at(const fs::path& path, std::uint64_t offset, std::size_t n) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    std::vector<std::byte> buf(n);
    in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(n));
    if (!in) throw std::runtime_error("cannot read " + path.string());
    return buf;
}

void write_at(const fs::path& path, std::uint64_t offset, const std::vector<std::byte>& buf) {
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(offset));
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::uint64_t be_at(const std::vector<std::byte>& buf, std::size_t at, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
        v = (v << 8) | std::to_integer<std::uint64_t>(buf.at(at + static_cast<std::size_t>(i)));
    return v;
}

/// CHS geometry per the specification's appendix (only informative for readers that use
/// current size, but a well-formed footer has it).
std::uint32_t geometry(std::uint64_t size) {
    std::uint64_t total = std::min<std::uint64_t>(size / kSector, 65535ull * 16 * 255);
    std::uint64_t spt = 0, heads = 0, cth = 0;
    if (total >= 65535ull * 16 * 63) {
        spt = 255;
        heads = 16;
        cth = total / spt;
    } else {
        spt = 17;
        cth = total / spt;
        heads = std::max<std::uint64_t>((cth + 1023) / 1024, 4);
        if (cth >= heads * 1024 || heads > 16) {
            spt = 31;
            heads = 16;
            cth = total / spt;
        }
        if (cth >= heads * 1024) {
            spt = 63;
            heads = 16;
            cth = total / spt;
        }
    }
    const std::uint64_t cyl = cth / heads;
    return static_cast<std::uint32_t>((cyl << 16) | (heads << 8) | spt);
}

std::vector<std::byte> make_footer(const VhdSpec& spec, std::uint64_t data_offset) {
    std::vector<std::byte> f(512);
    put_text(f, 0, "conectix");
    put_be(f, 8, 2, 4);            // features: reserved bit set
    put_be(f, 12, 0x00010000, 4);  // file format version
    put_be(f, 16, data_offset, 8);
    put_be(f, 24, 0x2d000000, 4);  // timestamp
    put_text(f, 28, "win ");       // creator: makes qemu use current size, as Hyper-V does
    put_be(f, 32, 0x000a0000, 4);
    put_text(f, 36, "Wi2k");
    put_be(f, 40, spec.virtual_size, 8);
    put_be(f, 48, spec.virtual_size, 8);
    put_be(f, 56, geometry(spec.virtual_size), 4);
    put_be(f, 60, spec.disk_type, 4);
    for (std::size_t i = 0; i < 16; ++i) f[68 + i] = static_cast<std::byte>(spec.unique_id[i]);
    put_be(f, 64, sum_except(f, 64), 4);
    return f;
}

}  // namespace

void append_fixed_vhd_footer(const fs::path& path, std::uint64_t virtual_size, const VhdGuid& unique_id) {
    if (virtual_size % kSector != 0) throw std::runtime_error("size must be whole sectors");
    VhdSpec spec;
    spec.disk_type = 2;
    spec.virtual_size = virtual_size;
    spec.unique_id = unique_id;
    // A fixed disk has no dynamic header: its data offset is all ones.
    const std::vector<std::byte> footer = make_footer(spec, ~std::uint64_t{0});
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(footer.data()), static_cast<std::streamsize>(footer.size()));
    if (!out) throw std::runtime_error("cannot append to " + path.string());
}

VhdLayout write_vhd(const fs::path& path, const VhdSpec& spec) {
    if (spec.locators.size() > 8) throw std::runtime_error("at most 8 locators");
    if (spec.virtual_size % kSector != 0) throw std::runtime_error("size must be whole sectors");
    const std::uint64_t bs = spec.block_size;
    const std::uint64_t sectors_per_block = bs / kSector;
    const std::uint64_t entries = (spec.virtual_size + bs - 1) / bs;
    const std::uint64_t bitmap_size = round_up((sectors_per_block + 7) / 8, kSector);

    VhdLayout layout;
    layout.header_offset = 512;
    layout.table_offset = 1536;
    std::uint64_t next = layout.table_offset + round_up(entries * 4, kSector);

    std::vector<std::uint64_t> locator_offsets;
    for (const auto& loc : spec.locators) {
        locator_offsets.push_back(next);
        next += round_up(std::max<std::uint64_t>(loc.data.size(), 1), kSector);
    }

    std::set<std::uint64_t> blocks = spec.extra_blocks;
    for (const auto& [sector, bytes] : spec.sectors) {
        if (bytes.size() != kSector) throw std::runtime_error("sector data must be 512 bytes");
        if (sector >= spec.virtual_size / kSector) throw std::runtime_error("sector past the disk");
        blocks.insert(sector / sectors_per_block);
    }
    std::vector<std::uint64_t> order(blocks.begin(), blocks.end());
    if (spec.reverse_block_order) std::reverse(order.begin(), order.end());
    for (const std::uint64_t b : order) {
        if (b >= entries) throw std::runtime_error("block past the disk");
        layout.block_offsets[b] = next;
        next += bitmap_size + bs;
    }
    layout.footer_offset = next;

    // Build the whole file in memory: test images are small.
    std::vector<std::byte> file(static_cast<std::size_t>(next + 512));
    const std::vector<std::byte> footer = make_footer(spec, layout.header_offset);
    std::copy(footer.begin(), footer.end(), file.begin());
    std::copy(footer.begin(), footer.end(), file.begin() + static_cast<std::ptrdiff_t>(layout.footer_offset));

    std::vector<std::byte> h(1024);
    put_text(h, 0, "cxsparse");
    put_be(h, 8, ~0ull, 8);
    put_be(h, 16, layout.table_offset, 8);
    put_be(h, 24, 0x00010000, 4);
    put_be(h, 28, entries, 4);
    put_be(h, 32, bs, 4);
    for (std::size_t i = 0; i < 16; ++i) h[40 + i] = static_cast<std::byte>(spec.parent_id[i]);
    put_be(h, 56, 0x2c000000, 4);  // parent timestamp
    for (std::size_t i = 0; i < spec.parent_name.size() && i < 256; ++i)
        put_be(h, 64 + 2 * i, static_cast<unsigned char>(spec.parent_name[i]), 2);
    for (std::size_t i = 0; i < spec.locators.size(); ++i) {
        const std::size_t at = 576 + 24 * i;
        const auto& loc = spec.locators[i];
        put_be(h, at, loc.code, 4);
        put_be(h, at + 4, round_up(std::max<std::uint64_t>(loc.data.size(), 1), kSector), 4);
        put_be(h, at + 8, loc.data.size(), 4);
        put_be(h, at + 16, locator_offsets[i], 8);
        std::copy(loc.data.begin(), loc.data.end(),
                  file.begin() + static_cast<std::ptrdiff_t>(locator_offsets[i]));
    }
    put_be(h, 36, sum_except(h, 36), 4);
    std::copy(h.begin(), h.end(), file.begin() + static_cast<std::ptrdiff_t>(layout.header_offset));

    for (std::uint64_t b = 0; b < entries; ++b) {
        const auto it = layout.block_offsets.find(b);
        const std::uint64_t entry = it == layout.block_offsets.end() ? 0xffffffffu : it->second / kSector;
        put_be(file, static_cast<std::size_t>(layout.table_offset + 4 * b), entry, 4);
    }
    for (const auto& [b, at] : layout.block_offsets) {
        const auto data = file.begin() + static_cast<std::ptrdiff_t>(at + bitmap_size);
        std::fill(data, data + static_cast<std::ptrdiff_t>(bs), spec.filler);
    }
    for (const auto& [sector, bytes] : spec.sectors) {
        const std::uint64_t b = sector / sectors_per_block;
        const std::uint64_t s = sector % sectors_per_block;
        const std::uint64_t at = layout.block_offsets.at(b);
        file[static_cast<std::size_t>(at + s / 8)] |= static_cast<std::byte>(0x80u >> (s % 8));
        std::copy(bytes.begin(), bytes.end(),
                  file.begin() + static_cast<std::ptrdiff_t>(at + bitmap_size + s * kSector));
    }

    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
    return layout;
}

std::vector<std::byte> vhd_utf16le(const std::string& text) {
    std::vector<std::byte> out;
    for (const char c : text) {
        out.push_back(static_cast<std::byte>(c));
        out.push_back(std::byte{0});
    }
    return out;
}

std::vector<std::byte> vhd_bytes(const std::string& text) {
    std::vector<std::byte> out;
    for (const char c : text) out.push_back(static_cast<std::byte>(c));
    return out;
}

VhdGuid vhd_unique_id(const fs::path& path) {
    const auto footer = read_at(path, fs::file_size(path) - 512, 512);
    VhdGuid id{};
    for (std::size_t i = 0; i < 16; ++i) id[i] = std::to_integer<std::uint8_t>(footer[68 + i]);
    return id;
}

void vhd_fix_checksums(const fs::path& path) {
    const std::uint64_t end = fs::file_size(path) - 512;
    auto footer = read_at(path, end, 512);
    put_be(footer, 64, sum_except(footer, 64), 4);
    write_at(path, end, footer);
    auto copy = read_at(path, 0, 512);
    if (std::memcmp(copy.data(), "conectix", 8) == 0) {
        put_be(copy, 64, sum_except(copy, 64), 4);
        write_at(path, 0, copy);
    }
    const std::uint64_t header_offset = be_at(footer, 16, 8);
    if (header_offset != ~0ull && header_offset + 1024 <= end) {
        auto header = read_at(path, header_offset, 1024);
        if (std::memcmp(header.data(), "cxsparse", 8) == 0) {
            put_be(header, 36, sum_except(header, 36), 4);
            write_at(path, header_offset, header);
        }
    }
}

void patch_be(const fs::path& path, std::uint64_t offset, std::uint64_t value, int bytes) {
    std::vector<std::byte> buf(static_cast<std::size_t>(bytes));
    put_be(buf, 0, value, bytes);
    write_at(path, offset, buf);
}

}  // namespace guestfrag::test
