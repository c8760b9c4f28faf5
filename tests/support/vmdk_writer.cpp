// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/vmdk_writer.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

#include "core/image/raw_image.hpp"
#include "core/image/unique_fd.hpp"

namespace guestfrag::test {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

constexpr std::uint64_t kSector = 512;

void put(Bytes& b, std::size_t at, std::uint64_t value, std::size_t width) {
    if (b.size() < at + width) b.resize(at + width);
    for (std::size_t i = 0; i < width; ++i) b[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

/// The raw source: its bytes and which grains hold host data.
class Source {
public:
    Source(const fs::path& path, std::uint64_t grain_bytes) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
        if (!fd_) throw std::runtime_error("cannot open " + path.string());
        size_ = fs::file_size(path);
        grain_bytes_ = grain_bytes;
        const ByteSet data = host_allocation(fd_.get(), size_, 512);
        for (const auto& iv : data)
            for (std::uint64_t g = iv.lower() / grain_bytes; g * grain_bytes < iv.upper(); ++g) stored_.push_back(g);
        stored_.erase(std::unique(stored_.begin(), stored_.end()), stored_.end());
    }

    [[nodiscard]] std::uint64_t size() const { return size_; }
    [[nodiscard]] std::uint64_t grains() const { return ceil_div(size_, grain_bytes_); }
    /// Grains with host data, ascending.
    [[nodiscard]] const std::vector<std::uint64_t>& stored() const { return stored_; }

    /// Grain `g`, zero-padded to a whole grain.
    [[nodiscard]] Bytes grain(std::uint64_t g) const {
        Bytes out(grain_bytes_, 0);
        const std::uint64_t at = g * grain_bytes_;
        const std::uint64_t n = std::min(grain_bytes_, size_ - at);
        if (::pread(fd_.get(), out.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n))
            throw std::runtime_error("short read from the raw source");
        return out;
    }

private:
    UniqueFd fd_;
    std::uint64_t size_ = 0;
    std::uint64_t grain_bytes_ = 0;
    std::vector<std::uint64_t> stored_;
};

/// Output file written with pwrite at sector offsets (holes stay holes).
class Output {
public:
    explicit Output(const fs::path& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
        if (!fd_) throw std::runtime_error("cannot create " + path.string());
    }
    void write(std::uint64_t sector, const Bytes& bytes) {
        if (::pwrite(fd_.get(), bytes.data(), bytes.size(), static_cast<off_t>(sector * kSector)) !=
            static_cast<ssize_t>(bytes.size()))
            throw std::runtime_error("short write");
    }
    void size(std::uint64_t sectors) {
        if (::ftruncate(fd_.get(), static_cast<off_t>(sectors * kSector)) != 0) throw std::runtime_error("ftruncate");
    }

private:
    UniqueFd fd_;
};

bool overlaps(const ByteRanges& ranges, std::uint64_t begin, std::uint64_t end) {
    return std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) { return r.first < end && begin < r.second; });
}

Bytes sparse_header(std::uint64_t capacity, std::uint64_t grain_sectors, std::uint64_t descriptor_sectors,
                    std::uint64_t gd_offset, std::uint64_t overhead) {
    Bytes h(kSector, 0);
    put(h, 0, 0x564d444b, 4);
    put(h, 4, 3, 4);
    put(h, 8, 0x1 | 0x10000 | 0x20000, 4);  // newline test, compressed grains, markers
    put(h, 12, capacity, 8);
    put(h, 20, grain_sectors, 8);
    put(h, 28, descriptor_sectors ? 1 : 0, 8);
    put(h, 36, descriptor_sectors, 8);
    put(h, 44, 512, 4);
    put(h, 48, 0, 8);
    put(h, 56, gd_offset, 8);
    put(h, 64, overhead, 8);
    h[73] = '\n';
    h[74] = ' ';
    h[75] = '\r';
    h[76] = '\n';
    put(h, 77, 1, 2);
    return h;
}

Bytes marker(std::uint64_t value, std::uint32_t type) {
    Bytes m(kSector, 0);
    put(m, 0, value, 8);
    put(m, 12, type, 4);
    return m;
}

}  // namespace

void write_cowd_extent(const fs::path& raw, const fs::path& out, const CowdWriteOptions& options) {
    const std::uint64_t grain_bytes = options.grain_sectors * kSector;
    const Source source(raw, grain_bytes);
    constexpr std::uint64_t gpt = 4096;
    const std::uint64_t tables = ceil_div(source.grains(), gpt);
    Output file(out);

    const std::uint64_t gd_sector = 4;
    std::uint64_t next = gd_sector + ceil_div(tables * 4, kSector);
    std::map<std::uint64_t, std::uint64_t> table_sector;  // table → sector
    for (const std::uint64_t g : source.stored())
        if (!table_sector.count(g / gpt)) {
            table_sector[g / gpt] = next;
            next += gpt * 4 / kSector;
        }
    std::map<std::uint64_t, Bytes> table_bytes;
    for (const auto& [t, sector] : table_sector) table_bytes[t] = Bytes(gpt * 4, 0);
    for (auto it = source.stored().rbegin(); it != source.stored().rend(); ++it) {
        file.write(next, source.grain(*it));
        put(table_bytes[*it / gpt], static_cast<std::size_t>(*it % gpt * 4), next, 4);
        next += options.grain_sectors;
    }
    Bytes gd(static_cast<std::size_t>(ceil_div(tables * 4, kSector) * kSector), 0);
    for (const auto& [t, sector] : table_sector) {
        put(gd, static_cast<std::size_t>(t * 4), sector, 4);
        file.write(sector, table_bytes[t]);
    }
    file.write(gd_sector, gd);

    Bytes h(2048, 0);
    put(h, 0, 0x44574f43, 4);
    put(h, 4, 1, 4);
    put(h, 8, options.parent_file_name.empty() ? 3 : 2, 4);
    put(h, 12, ceil_div(source.size(), kSector), 4);
    put(h, 16, options.grain_sectors, 4);
    put(h, 20, gd_sector, 4);
    put(h, 24, tables, 4);
    put(h, 28, next, 4);
    if (options.parent_file_name.empty()) {
        put(h, 32, 1024, 4);  // cylinders, heads, sectors of a root disk
        put(h, 36, 16, 4);
        put(h, 40, 63, 4);
    } else {
        std::copy(options.parent_file_name.begin(), options.parent_file_name.end(), h.begin() + 32);
    }
    put(h, 1060, 1, 4);
    file.write(0, h);
    file.size(next);
}

void write_sesparse_extent(const fs::path& raw, const fs::path& out, const SeSparseWriteOptions& options) {
    constexpr std::uint64_t grain_bytes = 4096;
    constexpr std::uint64_t gpt = 4096;
    const Source source(raw, grain_bytes);
    const std::uint64_t grains = source.grains();
    const std::uint64_t tables = ceil_div(grains, gpt);

    // Entry per grain: zero and unmapped ranges win over stored data.
    std::map<std::uint64_t, std::uint64_t> entries;
    std::vector<std::uint64_t> stored;
    for (std::uint64_t g = 0; g < grains; ++g) {
        const std::uint64_t begin = g * grain_bytes, end = begin + grain_bytes;
        if (overlaps(options.zero, begin, end)) entries[g] = 0x2000000000000000ull;
        else if (overlaps(options.unmapped, begin, end)) entries[g] = 0x1000000000000000ull;
    }
    for (const std::uint64_t g : source.stored())
        if (!entries.count(g)) stored.push_back(g);
    std::uint64_t index = options.first_grain_index;
    for (auto it = stored.rbegin(); it != stored.rend(); ++it, ++index)
        entries[*it] = 0x3000000000000000ull | ((index & 0xfff) << 48) | (index >> 12);

    std::vector<std::uint64_t> used_tables;
    for (const auto& [g, e] : entries)
        if (used_tables.empty() || used_tables.back() != g / gpt) used_tables.push_back(g / gpt);

    const std::uint64_t gd_offset = 8;
    const std::uint64_t gd_size = std::max<std::uint64_t>(1, ceil_div(tables * 8, kSector));
    const std::uint64_t gt_offset = ceil_div(gd_offset + gd_size, 8) * 8;
    const std::uint64_t gt_size = std::max<std::uint64_t>(1, used_tables.size()) * 64;
    const std::uint64_t grains_offset = gt_offset + gt_size;
    const std::uint64_t grains_size = (options.first_grain_index + stored.size()) * 8;

    Output file(out);
    Bytes gd(static_cast<std::size_t>(gd_size * kSector), 0);
    // Tables in reverse order of their index in the area.
    for (std::size_t k = 0; k < used_tables.size(); ++k) {
        const std::uint64_t t = used_tables[k];
        const std::uint64_t slot = used_tables.size() - 1 - k;
        put(gd, static_cast<std::size_t>(t * 8), 0x1000000000000000ull | slot, 8);
        Bytes gt(gpt * 8, 0);
        for (auto it = entries.lower_bound(t * gpt); it != entries.end() && it->first < (t + 1) * gpt; ++it)
            put(gt, static_cast<std::size_t>((it->first % gpt) * 8), it->second, 8);
        file.write(gt_offset + slot * 64, gt);
    }
    file.write(gd_offset, gd);
    index = options.first_grain_index;
    for (auto it = stored.rbegin(); it != stored.rend(); ++it, ++index) file.write(grains_offset + index * 8, source.grain(*it));

    Bytes c(kSector, 0);
    put(c, 0, 0x00000000cafebabeull, 8);
    put(c, 8, 0x0000000200000001ull, 8);
    put(c, 16, ceil_div(source.size(), kSector), 8);
    put(c, 24, 8, 8);
    put(c, 32, 64, 8);
    const std::uint64_t areas[] = {1, 1, 2, 1, 3, 5, gd_offset, gd_size, gt_offset, gt_size, 0, 0, 0, 0,
                                   grains_offset, grains_size};
    for (std::size_t i = 0; i < std::size(areas); ++i) put(c, 80 + i * 8, areas[i], 8);
    file.write(0, c);
    Bytes v(kSector, 0);
    put(v, 0, 0x00000000cafecafeull, 8);
    put(v, 8, used_tables.size(), 8);
    put(v, 24, options.dirty_journal ? 1 : 0, 8);
    file.write(1, v);
    file.size(grains_offset + grains_size);
}

void write_stream_optimized(const fs::path& raw, const fs::path& out, const std::string& descriptor,
                            std::uint64_t grain_sectors) {
    const std::uint64_t grain_bytes = grain_sectors * kSector;
    const Source source(raw, grain_bytes);
    constexpr std::uint64_t gpt = 512;
    const std::uint64_t capacity = ceil_div(source.size(), kSector);
    const std::uint64_t tables = ceil_div(source.grains(), gpt);
    const std::uint64_t descriptor_sectors = ceil_div(descriptor.size() + 1, kSector);
    Output file(out);

    Bytes text(static_cast<std::size_t>(descriptor_sectors * kSector), 0);
    std::copy(descriptor.begin(), descriptor.end(), text.begin());
    file.write(1, text);
    const std::uint64_t overhead = 1 + descriptor_sectors;
    std::uint64_t next = overhead;
    Bytes gd(static_cast<std::size_t>(ceil_div(tables * 4, kSector) * kSector), 0);
    for (std::uint64_t t = 0; t < tables; ++t) {
        Bytes gt(gpt * 4, 0);
        bool any = false;
        for (const std::uint64_t g : source.stored()) {
            if (g / gpt != t) continue;
            any = true;
            const Bytes data = source.grain(g);
            const std::uint64_t length = std::min(grain_bytes, source.size() - g * grain_bytes);
            uLongf packed_size = compressBound(static_cast<uLong>(length));
            Bytes packed(packed_size);
            if (compress2(packed.data(), &packed_size, data.data(), static_cast<uLong>(length), 6) != Z_OK)
                throw std::runtime_error("compress2 failed");
            Bytes grain_marker(static_cast<std::size_t>(ceil_div(12 + packed_size, kSector) * kSector), 0);
            put(grain_marker, 0, g * grain_sectors, 8);
            put(grain_marker, 8, packed_size, 4);
            std::copy(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(packed_size), grain_marker.begin() + 12);
            file.write(next, grain_marker);
            put(gt, static_cast<std::size_t>(g % gpt * 4), next, 4);
            next += grain_marker.size() / kSector;
        }
        if (!any) continue;
        file.write(next, marker(gt.size() / kSector, 1));
        file.write(next + 1, gt);
        put(gd, static_cast<std::size_t>(t * 4), next + 1, 4);
        next += 1 + gt.size() / kSector;
    }
    file.write(next, marker(gd.size() / kSector, 2));
    const std::uint64_t gd_offset = next + 1;
    file.write(gd_offset, gd);
    next = gd_offset + gd.size() / kSector;
    file.write(next, marker(1, 3));
    file.write(next + 1, sparse_header(capacity, grain_sectors, descriptor_sectors, gd_offset, overhead));
    file.write(next + 2, marker(0, 0));
    file.write(0, sparse_header(capacity, grain_sectors, descriptor_sectors, ~std::uint64_t{0}, overhead));
    file.size(next + 3);
}

std::string vmdk_descriptor_text(std::uint32_t cid, std::uint32_t parent_cid, const std::string& create_type,
                                 const std::vector<DescriptorExtent>& extents,
                                 const std::optional<std::string>& parent_hint) {
    char ids[64];
    std::snprintf(ids, sizeof ids, "CID=%08x\nparentCID=%08x\n", cid, parent_cid);
    std::string text = "# Disk DescriptorFile\nversion=1\nencoding=\"UTF-8\"\n" + std::string(ids) +
                       "isNativeSnapshot=\"no\"\ncreateType=\"" + create_type + "\"\n";
    if (parent_hint) text += "parentFileNameHint=\"" + *parent_hint + "\"\n";
    text += "\n# Extent description\n";
    for (const DescriptorExtent& e : extents) {
        text += e.access + " " + std::to_string(e.sectors) + " " + e.type;
        if (!e.file.empty()) text += " \"" + e.file + "\"";
        if (e.offset) text += " " + std::to_string(*e.offset);
        text += "\n";
    }
    text += "\n# The Disk Data Base\n#DDB\n\nddb.virtualHWVersion = \"4\"\nddb.adapterType = \"lsilogic\"\n";
    return text;
}

void write_text_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace guestfrag::test
