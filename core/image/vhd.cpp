// SPDX-License-Identifier: GPL-2.0-or-later
// The VHD layer: footer, dynamic header, block allocation table (BAT) and sector bitmaps
// turned into Mappings. Parsing of the two headers is in vhd_format.cpp, parent locators
// in vhd_parent.cpp.
#include "core/image/vhd.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/image/host_file.hpp"
#include "core/image/vhd_format.hpp"
#include "core/image/vhd_parent.hpp"

namespace guestfrag {
namespace {

using vhd::kSectorSize;

std::uint64_t round_up(std::uint64_t value, std::uint64_t unit) { return (value + unit - 1) / unit * unit; }

bool bit_at(const std::uint8_t* bits, std::size_t i) {
    // Sector 0 of a block is the most significant bit of the bitmap's first byte.
    return (bits[i >> 3] & (0x80u >> (i & 7))) != 0;
}

/// First index in [from, limit) whose bit differs from `value`, or `limit`.
std::size_t bit_run_end(const std::uint8_t* bits, std::size_t from, std::size_t limit, bool value) {
    std::size_t i = from;
    for (; i < limit && (i & 7) != 0; ++i)
        if (bit_at(bits, i) != value) return i;
    const std::uint8_t uniform = value ? 0xff : 0x00;
    while (i + 8 <= limit && bits[i >> 3] == uniform) i += 8;
    while (i < limit && bit_at(bits, i) == value) ++i;
    return i;
}

/// Reads the footer from the end of the file. Very old Virtual PC versions wrote a
/// 511-byte footer (the last reserved byte missing), so "conectix" one byte later is
/// accepted too and the missing byte taken as zero.
vhd::Footer read_footer(const HostFile& file, std::uint64_t& footer_offset) {
    std::array<std::byte, vhd::kFooterSize> bytes{};
    const auto cookie_at = [&](std::size_t at) { return std::memcmp(bytes.data() + at, "conectix", 8) == 0; };
    if (file.size() >= vhd::kFooterSize) {
        file.read_exact(file.size() - vhd::kFooterSize, bytes, "vhd footer");
        if (cookie_at(0)) {
            footer_offset = file.size() - vhd::kFooterSize;
            return vhd::parse_footer(bytes);
        }
        if (cookie_at(1)) {
            std::memmove(bytes.data(), bytes.data() + 1, bytes.size() - 1);
            bytes.back() = std::byte{0};
            footer_offset = file.size() - (vhd::kFooterSize - 1);
            return vhd::parse_footer(bytes);
        }
    }
    // Dynamic disks keep a copy of the footer at offset 0; finding only that copy means
    // the end of the file is gone. The copy is not used instead: the blocks that were
    // written last are missing too.
    std::array<std::byte, 8> head{};
    if (file.size() >= head.size()) file.read_exact(0, head, "vhd footer copy");
    if (std::memcmp(head.data(), "conectix", 8) == 0)
        throw Error(ErrorKind::Corrupt, "vhd: no footer at the end of the file (" +
                                            std::to_string(file.size()) +
                                            " bytes); the file is probably truncated");
    throw Error(ErrorKind::Corrupt, "vhd: no \"conectix\" footer at the end of the file");
}

/// A byte range of the file that holds one structure, for overlap checks.
struct Extent {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::string what;
};

class VhdLayer final : public LayerFile {
public:
    explicit VhdLayer(HostFile file) : file_(std::move(file)) {
        footer_ = read_footer(file_, footer_offset_);
        if (footer_.disk_type == vhd::DiskType::Fixed) {
            // A truncated copy (data cut short, footer appended again) is read as far as
            // its data goes, as qemu reads it: what lies there (partitions, volumes) can
            // be analysed. The missing bytes stay allocated, they are not zero on the
            // disk the copy came from, so reading them fails rather than inventing zeros.
            present_ = std::min(footer_.current_size, footer_offset_);
            return;
        }
        open_sparse();
    }

    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Vhd; }
    [[nodiscard]] const std::string& path() const override { return file_.path(); }
    [[nodiscard]] std::uint64_t virtual_size() const override { return footer_.current_size; }
    [[nodiscard]] std::uint64_t granule_size() const override {
        return footer_.disk_type == vhd::DiskType::Dynamic ? block_size_ : kSectorSize;
    }
    [[nodiscard]] std::uint64_t growth_unit() const override {
        return footer_.disk_type == vhd::DiskType::Fixed ? kSectorSize : block_size_;
    }
    [[nodiscard]] std::optional<ParentLink> parent() const override { return parent_; }
    [[nodiscard]] std::uint64_t held_bytes() const override { return file_.source().held_bytes(); }
    [[nodiscard]] LayerProvisioning provisioning(bool) const override {
        if (footer_.disk_type != vhd::DiskType::Fixed)
            return {Provisioning::Thin, block_size_, false,
                    std::string(footer_.disk_type == vhd::DiskType::Dynamic ? "dynamic" : "differencing") +
                        " vhd: a block is allocated on its first write"};
        // A fixed VHD records no block size; 2 MiB is what a dynamic one of Hyper-V uses.
        constexpr std::uint64_t kDefaultBlock = 2 << 20;
        return {Provisioning::Eager, kDefaultBlock, true,
                "fixed vhd: preallocated, and the file does not record lazy against eager: eager assumed, "
                "as Hyper-V zero-fills a fixed disk when it creates it"};
    }
    [[nodiscard]] std::optional<std::string> identity() const override {
        return vhd::guid_text(footer_.unique_id);
    }
    [[nodiscard]] std::vector<std::string> warnings() const override {
        const std::uint64_t size = footer_.current_size;
        if (footer_.disk_type != vhd::DiskType::Fixed || present_ == size) return {};
        return {"fixed vhd is truncated: its footer says " + std::to_string(size) + " bytes of data, the file holds " +
                std::to_string(present_) + "; the last " + std::to_string(size - present_) +
                " bytes of the disk (from offset " + std::to_string(present_) +
                ") are missing, and whatever needs them fails"};
    }

    [[nodiscard]] Mapping map(std::uint64_t offset) const override {
        const std::uint64_t size = footer_.current_size;
        if (offset >= size)
            throw Error(ErrorKind::Internal,
                        "vhd: map at offset " + std::to_string(offset) + " past the end of the disk");
        if (footer_.disk_type == vhd::DiskType::Fixed) {
            if (offset < present_) return {Allocation::Data, present_ - offset, offset};
            return {Allocation::Data, size - offset, std::nullopt};  // missing from the file
        }
        return map_sparse(offset);
    }

    void read(std::uint64_t offset, std::span<std::byte> out) const override {
        const std::uint64_t size = footer_.current_size;
        if (offset > size || out.size() > size - offset)
            throw Error(ErrorKind::Corrupt, "vhd: read past the end of the disk (offset " +
                                                std::to_string(offset) + ", " + std::to_string(out.size()) +
                                                " bytes)");
        if (footer_.disk_type == vhd::DiskType::Fixed) {
            if (out.size() > present_ - std::min(offset, present_))
                throw Error(ErrorKind::Corrupt, "vhd: the file is truncated: disk bytes " + std::to_string(offset) +
                                                    " to " + std::to_string(offset + out.size()) +
                                                    " are needed, but its data ends at " +
                                                    std::to_string(present_));
            file_.read_exact(offset, out, "vhd data");
            return;
        }
        // Block by block: stored blocks are read from the file (whatever their bitmap
        // says: callers read only the runs map() reported), absent ones are zero.
        while (!out.empty()) {
            const std::uint64_t block = offset / block_size_;
            const std::uint64_t within = offset % block_size_;
            const auto n =
                static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), block_size_ - within));
            const std::uint32_t entry = bat_[block];
            if (entry == vhd::kBatUnused)
                std::memset(out.data(), 0, n);
            else
                file_.read_exact(data_offset(entry) + within, out.first(n), "vhd block data");
            offset += n;
            out = out.subspan(n);
        }
    }

private:
    [[nodiscard]] std::uint64_t data_offset(std::uint32_t entry) const {
        return std::uint64_t{entry} * kSectorSize + bitmap_size_;
    }

    void open_sparse() {
        const std::uint64_t size = footer_.current_size;
        const std::uint64_t header_offset = footer_.data_offset;
        if (header_offset > footer_offset_ || footer_offset_ - header_offset < vhd::kDynamicHeaderSize)
            throw Error(ErrorKind::Corrupt, "vhd: dynamic disk header at offset " +
                                                std::to_string(header_offset) +
                                                " lies past the end of the file (footer at offset " +
                                                std::to_string(footer_offset_) + ")");
        std::array<std::byte, vhd::kDynamicHeaderSize> header_bytes{};
        file_.read_exact(header_offset, header_bytes, "vhd dynamic disk header");
        const vhd::DynamicHeader header = vhd::parse_dynamic_header(header_bytes, size);
        block_size_ = header.block_size;
        const std::uint64_t sectors_per_block = block_size_ / kSectorSize;
        bitmap_bytes_ = static_cast<std::size_t>((sectors_per_block + 7) / 8);
        bitmap_size_ = round_up(bitmap_bytes_, kSectorSize);

        // Only the entries that cover the virtual disk are used; the table may be longer.
        // Bounding them by the file before allocating keeps a corrupt header from asking
        // for gigabytes.
        const std::uint64_t blocks = (size + block_size_ - 1) / block_size_;
        const std::uint64_t table_bytes = blocks * 4;
        if (header.table_offset > footer_offset_ || table_bytes > footer_offset_ - header.table_offset)
            throw Error(ErrorKind::Corrupt, "vhd: block allocation table (" + std::to_string(blocks) +
                                                " entries at offset " + std::to_string(header.table_offset) +
                                                ") lies past the end of the file (footer at offset " +
                                                std::to_string(footer_offset_) + ")");
        std::vector<std::byte> table(static_cast<std::size_t>(table_bytes));
        file_.read_exact(header.table_offset, table, "vhd block allocation table");
        bat_.resize(static_cast<std::size_t>(blocks));
        for (std::size_t i = 0; i < bat_.size(); ++i) {
            std::uint32_t entry = 0;
            for (std::size_t k = 0; k < 4; ++k)
                entry = (entry << 8) | std::to_integer<std::uint32_t>(table[4 * i + k]);
            bat_[i] = entry;
        }

        std::vector<Extent> extents{
            {0, vhd::kFooterSize, "the footer copy"},
            {header_offset, header_offset + vhd::kDynamicHeaderSize, "the dynamic disk header"},
            {header.table_offset, header.table_offset + table_bytes, "the block allocation table"},
        };
        for (std::size_t i = 0; i < bat_.size(); ++i) {
            if (bat_[i] == vhd::kBatUnused) continue;
            const std::uint64_t begin = std::uint64_t{bat_[i]} * kSectorSize;
            // The last block may extend past the virtual disk; only its used part must be
            // in the file.
            const std::uint64_t used = std::min<std::uint64_t>(block_size_, size - i * block_size_);
            const std::uint64_t end = begin + bitmap_size_ + used;
            if (end > footer_offset_)
                throw Error(
                    ErrorKind::Corrupt,
                    "vhd: block allocation table entry " + std::to_string(i) + " (block at file offset " +
                        std::to_string(begin) + ", " + std::to_string(end - begin) + " bytes) lies past " +
                        (end > file_.size()
                             ? "the end of the file (" + std::to_string(file_.size()) + " bytes)"
                             : "the start of the footer (offset " + std::to_string(footer_offset_) + ")"));
            extents.push_back({begin, end, "block " + std::to_string(i)});
        }
        std::sort(extents.begin(), extents.end(),
                  [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
        for (std::size_t i = 1; i < extents.size(); ++i)
            if (extents[i].begin < extents[i - 1].end)
                throw Error(ErrorKind::Corrupt, "vhd: " + extents[i - 1].what + " and " + extents[i].what +
                                                    " overlap in the file (offsets " +
                                                    std::to_string(extents[i - 1].begin) + " and " +
                                                    std::to_string(extents[i].begin) + ")");

        if (footer_.disk_type != vhd::DiskType::Differencing) return;
        parent_ = vhd::parent_link(file_, header);
        load_bitmaps();
    }

    /// Reads the sector bitmap of every stored block, in file order so the reads go
    /// forward through the file. Bounded by the file: each stored block occupies at least
    /// its bitmap sector there.
    void load_bitmaps() {
        bitmap_slot_.assign(bat_.size(), 0);
        std::size_t stored = 0;
        for (const std::uint32_t entry : bat_) stored += entry != vhd::kBatUnused;
        bitmaps_.resize(stored * bitmap_bytes_);
        std::vector<std::uint64_t> order;  // block indices in file order
        for (std::size_t i = 0; i < bat_.size(); ++i)
            if (bat_[i] != vhd::kBatUnused) order.push_back(i);
        std::sort(order.begin(), order.end(),
                  [&](std::uint64_t a, std::uint64_t b) { return bat_[a] < bat_[b]; });
        for (std::size_t slot = 0; slot < order.size(); ++slot) {
            const std::uint64_t block = order[slot];
            bitmap_slot_[block] = static_cast<std::uint32_t>(slot);
            const std::span<std::byte> into(
                reinterpret_cast<std::byte*>(bitmaps_.data()) + slot * bitmap_bytes_, bitmap_bytes_);
            file_.read_exact(std::uint64_t{bat_[block]} * kSectorSize, into, "vhd sector bitmap");
        }
    }

    [[nodiscard]] Mapping map_sparse(std::uint64_t offset) const {
        const std::uint64_t size = footer_.current_size;
        const bool differencing = footer_.disk_type == vhd::DiskType::Differencing;
        Mapping result;
        std::uint64_t end = offset;
        for (std::uint64_t pos = offset; pos < size;) {
            const std::uint64_t block = pos / block_size_;
            const std::uint64_t block_start = block * block_size_;
            const std::uint64_t block_end = std::min(block_start + block_size_, size);
            const std::uint32_t entry = bat_[block];
            Allocation state = Allocation::Unallocated;
            std::uint64_t run_end = block_end;
            if (entry != vhd::kBatUnused) {
                state = Allocation::Data;
                if (differencing) {
                    const std::uint8_t* bits =
                        bitmaps_.data() + std::size_t{bitmap_slot_[block]} * bitmap_bytes_;
                    const auto first = static_cast<std::size_t>((pos - block_start) / kSectorSize);
                    const auto limit = static_cast<std::size_t>((block_end - block_start) / kSectorSize);
                    const bool set = bit_at(bits, first);
                    state = set ? Allocation::Data : Allocation::Unallocated;
                    run_end = block_start + bit_run_end(bits, first, limit, set) * kSectorSize;
                }
            }
            if (pos == offset) {
                result.state = state;
                if (state == Allocation::Data)
                    result.file_offset = data_offset(entry) + (offset - block_start);
            } else if (state != result.state) {
                break;
            }
            end = run_end;
            // Stored data never continues into the next block contiguously (its bitmap
            // sits in between), and a run ending inside a block ends the state.
            if (result.state == Allocation::Data || run_end < block_end) break;
            pos = run_end;
        }
        result.length = end - offset;
        return result;
    }

    HostFile file_;
    vhd::Footer footer_;
    std::uint64_t footer_offset_ = 0;  ///< where the footer at the end of the file starts
    std::uint64_t present_ = 0;        ///< fixed disks: bytes of the disk the file holds (less when truncated)
    std::uint64_t block_size_ = 0;
    std::size_t bitmap_bytes_ = 0;            ///< bitmap bytes that describe one block's sectors
    std::uint64_t bitmap_size_ = 0;           ///< bitmap bytes stored before each block (whole sectors)
    std::vector<std::uint32_t> bat_;          ///< one entry per block of the virtual disk: sector or unused
    std::vector<std::uint32_t> bitmap_slot_;  ///< differencing: block → index into bitmaps_
    std::vector<std::uint8_t> bitmaps_;       ///< differencing: bitmaps of stored blocks
    std::optional<ParentLink> parent_;
};

}  // namespace

std::unique_ptr<LayerFile> open_vhd(HostFile file) { return std::make_unique<VhdLayer>(std::move(file)); }

std::unique_ptr<LayerFile> open_vhd(const std::string& path) { return open_vhd(HostFile(path)); }

}  // namespace guestfrag
