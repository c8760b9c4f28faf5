// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/model/volume_map.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

namespace guestfrag {

// The size docs/design.md §1 gives: a million-stream volume holds a million of these in each
// map a command keeps (a plan keeps two).
static_assert(sizeof(Stream) <= 88);

namespace {

/// Most path components resolved; a deeper chain is reported as an orphan (docs/metrics.md).
constexpr std::size_t kMaxPathDepth = 1024;

/// Whether a run occupies clusters: holes (sparse or compressed, LCN −1), corrupt negative
/// LCNs and empty runs do not.
bool allocated(const Extent& e) { return e.lcn >= 0 && e.clusters > 0; }

/// Attribute type names as $AttrDef spells them.
std::string_view type_name(std::uint32_t type) {
    switch (type) {
        case 0x10:
            return "$STANDARD_INFORMATION";
        case static_cast<std::uint32_t>(AttrType::AttributeList):
            return "$ATTRIBUTE_LIST";
        case 0x30:
            return "$FILE_NAME";
        case 0x40:
            return "$OBJECT_ID";
        case 0x50:
            return "$SECURITY_DESCRIPTOR";
        case 0x60:
            return "$VOLUME_NAME";
        case 0x70:
            return "$VOLUME_INFORMATION";
        case static_cast<std::uint32_t>(AttrType::Data):
            return "$DATA";
        case 0x90:
            return "$INDEX_ROOT";
        case static_cast<std::uint32_t>(AttrType::IndexAllocation):
            return "$INDEX_ALLOCATION";
        case static_cast<std::uint32_t>(AttrType::Bitmap):
            return "$BITMAP";
        case static_cast<std::uint32_t>(AttrType::ReparsePoint):
            return "$REPARSE_POINT";
        case static_cast<std::uint32_t>(AttrType::EaInformation):
            return "$EA_INFORMATION";
        case static_cast<std::uint32_t>(AttrType::Ea):
            return "$EA";
        case 0xF0:
            return "$PROPERTY_SET";
        case static_cast<std::uint32_t>(AttrType::LoggedUtilityStream):
            return "$LOGGED_UTILITY_STREAM";
        default:
            return {};
    }
}

// The label's type part: the attribute's name, or its code in hex ("$0x1234") in `buffer`.
std::string_view type_text(std::uint32_t type, std::array<char, 16>& buffer) {
    if (const std::string_view known = type_name(type); !known.empty()) return known;
    std::snprintf(buffer.data(), buffer.size(), "$0x%02X", static_cast<unsigned>(type));
    return buffer.data();
}

}  // namespace

std::string stream_label(std::uint32_t type, std::string_view name) {
    std::array<char, 16> buffer{};
    std::string out(type_text(type, buffer));
    if (!name.empty()) {
        out += ':';
        out += name;
    }
    return out;
}

std::string Stream::label() const { return stream_label(type, name); }

bool Stream::has_label(std::string_view label) const {
    std::array<char, 16> buffer{};
    const std::string_view type_part = type_text(type, buffer);
    if (!label.starts_with(type_part)) return false;
    label.remove_prefix(type_part.size());
    if (name.empty()) return label.empty();
    return label.size() == name.size() + 1 && label.front() == ':' && label.substr(1) == name;
}

std::uint64_t fragments_of(std::span<const Extent> runs) {
    std::uint64_t count = 0;
    const Extent* previous = nullptr;  // last allocated run; holes between do not reset it
    for (const Extent& e : runs) {
        if (!allocated(e)) continue;
        // Both LCNs are ≥ 0, so the difference cannot overflow where lcn + clusters might.
        const bool continues =
            previous != nullptr && e.lcn > previous->lcn && e.lcn - previous->lcn == previous->clusters;
        if (!continues) ++count;
        previous = &e;
    }
    return count;
}

std::uint64_t Stream::fragments() const { return fragments_of(extents); }

std::int64_t Stream::unit_clusters() const {
    // The reader refuses units over 2^16 clusters (mft_parser), so the shift is defined.
    if ((flags & (kCompressed | kSparse)) == 0 || compression_unit == 0 || compression_unit > 16) return 1;
    return std::int64_t{1} << compression_unit;
}

std::int64_t Stream::allocated_clusters() const {
    std::int64_t total = 0;
    for (const Extent& e : extents) {
        if (!allocated(e)) continue;
        // Saturate rather than wrap on corrupt run lists.
        total = e.clusters > std::numeric_limits<std::int64_t>::max() - total
                    ? std::numeric_limits<std::int64_t>::max()
                    : total + e.clusters;
    }
    return total;
}

std::string_view NamePool::add(std::string_view text) {
    if (text.empty()) return {};
    if (text.size() > kBlockSize / 4) {
        // A block of its own, so the current block's free space is not thrown away for it.
        // NTFS names (at most 255 UTF-16 units, 765 bytes of UTF-8) never come here.
        const auto& block = blocks_.emplace_back(std::make_unique_for_overwrite<char[]>(text.size()));
        allocated_ += text.size();
        std::memcpy(block.get(), text.data(), text.size());
        return {block.get(), text.size()};
    }
    if (text.size() > left_) {
        next_ = blocks_.emplace_back(std::make_unique_for_overwrite<char[]>(kBlockSize)).get();
        left_ = kBlockSize;
        allocated_ += kBlockSize;
    }
    char* out = next_;
    std::memcpy(out, text.data(), text.size());
    next_ += text.size();
    left_ -= text.size();
    return {out, text.size()};
}

std::int64_t VolumeMap::free_clusters() const {
    std::int64_t total = 0;
    for (const auto& interval : free) total += boost::icl::length(interval);
    return total;
}

const FileEntry* VolumeMap::find_file(std::uint64_t mft_record) const {
    const auto it = std::lower_bound(files.begin(), files.end(), mft_record,
                                     [](const FileEntry& f, std::uint64_t r) { return f.mft_record < r; });
    return it != files.end() && it->mft_record == mft_record ? &*it : nullptr;
}

std::string VolumeMap::path_of(std::uint64_t mft_record) const {
    if (mft_record == kRootRecord) return "\\";

    // Walk towards the root, remembering each record visited so a parent loop is caught the
    // first time it closes; kMaxPathDepth bounds the walk (and the quadratic loop check).
    std::vector<const FileEntry*> chain;  // the record first, its ancestors after it
    std::uint64_t current = mft_record;
    bool rooted = false;
    for (;;) {
        if (current == kRootRecord) {
            rooted = true;
            break;
        }
        if (chain.size() == kMaxPathDepth) break;  // too deep to be real: call it an orphan
        const FileEntry* entry = find_file(current);
        if (entry == nullptr) break;  // missing parent (or missing record)
        const bool loop =
            std::any_of(chain.begin(), chain.end(), [entry](const FileEntry* seen) { return seen == entry; });
        if (loop) break;
        chain.push_back(entry);
        current = entry->parent;
    }

    std::string path = rooted ? "" : "<orphan>";
    if (chain.empty()) return path + "\\<record " + std::to_string(mft_record) + ">";
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        path += '\\';
        path += (*it)->name;
    }
    return path;
}

}  // namespace guestfrag
