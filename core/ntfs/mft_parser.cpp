// SPDX-License-Identifier: GPL-2.0-or-later
// Decodes MFT records straight from $MFT's bytes. Opening each inode through libntfs-3g
// costs a lookup and several allocations per record; walking the raw records in large
// sequential reads is what makes million-record volumes scan in seconds. libntfs-3g still
// does the parts with format subtleties: update-sequence fixups, mapping-pairs decoding,
// UTF-16 names.
#include "core/ntfs/mft_parser.hpp"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>


#include "core/error.hpp"
#include "core/ntfs/ntfs3g.hpp"

namespace guestfrag::ntfs {
namespace {

[[noreturn]] void corrupt(std::uint64_t number, const std::string& what) {
    throw Error(ErrorKind::Corrupt, "MFT record " + std::to_string(number) + ": " + what);
}

// Little-endian field access at an offset already checked against the record bounds.
template <typename T>
T field(const std::byte* base, std::size_t offset) {
    T value;
    std::memcpy(&value, base + offset, sizeof value);
    return value;  // x86-64 and the other targets we build for are little-endian, as NTFS is
}

std::string utf8_name(const std::byte* utf16, std::size_t units) {
    if (units == 0) return {};  // an empty vector's data() may be null, which memcpy may not get
    // Nearly every name is ASCII, whose UTF-8 is its UTF-16 units' low bytes: built here,
    // without ntfs_ucstombs and its allocations, 8 % of a volume's scan.
    std::string ascii(units, '\0');
    bool plain = true;
    for (std::size_t i = 0; i < units && plain; ++i) {
        const auto unit = field<std::uint16_t>(utf16, 2 * i);
        ascii[i] = static_cast<char>(unit);
        plain = unit != 0 && unit < 0x80;
    }
    if (plain) return ascii;
    char* out = nullptr;
    // ntfs_ucstombs reads ntfschar, which may be misaligned inside the record: copy first.
    std::vector<ntfschar> aligned(units);
    std::memcpy(aligned.data(), utf16, units * sizeof(ntfschar));
    const int n = ntfs_ucstombs(aligned.data(), static_cast<int>(units), &out, 0);
    if (n < 0) {
        // Windows allows unpaired surrogates in names; show them as '?' rather than failing.
        std::string lossy;
        for (ntfschar c : aligned) lossy += le16_to_cpu(c) < 0x80 ? static_cast<char>(le16_to_cpu(c)) : '?';
        return lossy;
    }
    std::string name(out, static_cast<std::size_t>(n));
    std::free(out);
    return name;
}

struct RunlistFree {
    void operator()(runlist_element* rl) const noexcept { std::free(rl); }
};

void decode_runs(const ntfs_volume& volume, const ATTR_RECORD* attr, std::uint64_t number,
                 AttributeSegment& segment) {
    errno = 0;
    std::unique_ptr<runlist_element, RunlistFree> rl(ntfs_mapping_pairs_decompress(&volume, attr, nullptr));
    if (!rl) corrupt(number, "invalid mapping pairs in attribute 0x" + [&] {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%x", segment.type);
        return std::string(buf);
    }());
    // Count first so the runs get one allocation of exactly their size: most streams keep
    // this vector for the life of the VolumeMap.
    std::size_t count = 0;
    for (const runlist_element* r = rl.get(); r->length != 0; ++r) count += r->lcn != LCN_RL_NOT_MAPPED ? 1 : 0;
    segment.runs.reserve(count);
    for (const runlist_element* r = rl.get(); r->length != 0; ++r) {
        if (r->lcn == LCN_RL_NOT_MAPPED) continue;  // VCNs held by another segment
        if (r->lcn == LCN_HOLE) {
            segment.runs.push_back({r->vcn, Extent::kSparse, r->length});
            continue;
        }
        if (r->lcn < 0 || r->length <= 0 || r->lcn > volume.nr_clusters - r->length)
            corrupt(number, "run at LCN " + std::to_string(r->lcn) + " (+" + std::to_string(r->length) +
                                ") lies outside the volume's " + std::to_string(volume.nr_clusters) + " clusters");
        segment.runs.push_back({r->vcn, r->lcn, r->length});
    }
}

}  // namespace

bool parse_mft_record(const ntfs_volume& volume, std::span<std::byte> bytes, std::uint64_t number,
                      MftRecord& out, bool file_names) {
    std::byte* rec = bytes.data();
    const auto size = static_cast<std::uint32_t>(bytes.size());
    if (!ntfs_is_file_recordp(reinterpret_cast<le32*>(rec))) corrupt(number, "bad signature (not FILE)");
    if (ntfs_mst_post_read_fixup(reinterpret_cast<NTFS_RECORD*>(rec), size) != 0)
        corrupt(number, "update sequence mismatch (torn or damaged record)");
    const auto* header = reinterpret_cast<const MFT_RECORD*>(rec);
    const std::uint16_t flags = le16_to_cpu(header->flags);
    if ((flags & le16_to_cpu(MFT_RECORD_IN_USE)) == 0) return false;

    const std::uint32_t in_use = le32_to_cpu(header->bytes_in_use);
    const std::uint16_t first = le16_to_cpu(header->attrs_offset);
    if (in_use > size || in_use < 48 || first < 42 || first >= in_use || first % 8 != 0)
        corrupt(number, "header fields point outside the record");

    // Reuse the vectors' storage from the previous record (the scan passes the same one).
    out.names.clear();
    out.segments.clear();
    out.number = number;
    out.sequence = le16_to_cpu(header->sequence_number);
    out.directory = (flags & le16_to_cpu(MFT_RECORD_IS_DIRECTORY)) != 0;
    const std::uint64_t base_ref = le64_to_cpu(header->base_mft_record);
    out.base = base_ref == 0 ? number : MREF(base_ref);
    out.base_sequence = MSEQNO(base_ref);

    std::uint32_t pos = first;
    while (true) {
        if (pos + 4 > in_use) corrupt(number, "attribute list runs past the end of the record");
        const std::uint32_t type = field<std::uint32_t>(rec, pos);
        if (type == le32_to_cpu(AT_END)) break;
        if (pos + 16 > in_use) corrupt(number, "truncated attribute header");
        const auto* attr = reinterpret_cast<const ATTR_RECORD*>(rec + pos);
        const std::uint32_t length = le32_to_cpu(attr->length);
        if (length < 24 || length % 8 != 0 || length > in_use - pos)
            corrupt(number, "attribute at offset " + std::to_string(pos) + " has an invalid length");
        const std::uint32_t name_end = le16_to_cpu(attr->name_offset) + 2u * attr->name_length;
        if (attr->name_length != 0 && name_end > length) corrupt(number, "attribute name outside the attribute");

        if (attr->non_resident) {
            if (length < 64 || le16_to_cpu(attr->mapping_pairs_offset) >= length)
                corrupt(number, "truncated non-resident attribute");
            AttributeSegment segment;
            segment.type = type;
            if (attr->name_length != 0)
                segment.name = utf8_name(rec + pos + le16_to_cpu(attr->name_offset), attr->name_length);
            segment.flags = le16_to_cpu(attr->flags);
            segment.compression_unit = attr->compression_unit;
            // NTFS writes 4 (16 clusters); anything past 2^16 clusters is no unit a volume uses.
            if ((segment.flags & (Stream::kCompressed | Stream::kSparse)) != 0 &&
                segment.compression_unit > 16)
                corrupt(number, "invalid compression unit " + std::to_string(segment.compression_unit));
            segment.lowest_vcn = sle64_to_cpu(attr->lowest_vcn);
            segment.highest_vcn = sle64_to_cpu(attr->highest_vcn);
            if (segment.lowest_vcn < 0 || segment.highest_vcn < segment.lowest_vcn - 1)
                corrupt(number, "invalid VCN range in a non-resident attribute");
            if (segment.lowest_vcn == 0) {
                const auto data_size = sle64_to_cpu(attr->data_size);
                const auto allocated = sle64_to_cpu(attr->allocated_size);
                if (data_size < 0 || allocated < 0) corrupt(number, "negative attribute size");
                segment.data_size = static_cast<std::uint64_t>(data_size);
                segment.allocated_size = static_cast<std::uint64_t>(allocated);
            }
            decode_runs(volume, attr, number, segment);
            out.segments.push_back(std::move(segment));
        } else if (type == le32_to_cpu(AT_FILE_NAME)) {
            const std::uint32_t value_offset = le16_to_cpu(attr->value_offset);
            const std::uint32_t value_length = le32_to_cpu(attr->value_length);
            if (value_offset > length || value_length > length - value_offset || value_length < 66)
                corrupt(number, "truncated $FILE_NAME attribute");
            const auto* fn = reinterpret_cast<const FILE_NAME_ATTR*>(rec + pos + value_offset);
            if (66u + 2u * fn->file_name_length > value_length) corrupt(number, "$FILE_NAME longer than its attribute");
            // The namespace is read as a byte: loaded as ntfs-3g's FILE_NAME_TYPE_FLAGS, a
            // value outside the enum's 0-3 (any byte on a hostile volume) is undefined.
            const auto name_space =
                field<std::uint8_t>(rec + pos + value_offset, offsetof(FILE_NAME_ATTR, file_name_type));
            if (file_names)
                out.names.push_back({MREF_LE(fn->parent_directory), name_space,
                                     utf8_name(rec + pos + value_offset + 66, fn->file_name_length)});
        }
        pos += length;
    }
    return true;
}

}  // namespace guestfrag::ntfs
