// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/ntfs/placement.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace guestfrag::ntfs {
namespace {

// ASCII only, as the rules' names are: std::tolower asks the locale each call (3 % of
// `estimate` on a million files), and a locale such as Latin-1, which the GUI may run in,
// would lower the bytes of UTF-8 names.
char lower_char(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lower(std::string_view s) {
    std::string out(s);
    std::ranges::transform(out, out.begin(), lower_char);
    return out;
}

// lower(name) == lower_text, without the copy.
bool same_lower(char c, char lower) { return lower_char(c) == lower; }
bool equals_lower(std::string_view name, std::string_view lower_text) {
    return std::equal(name.begin(), name.end(), lower_text.begin(), lower_text.end(), same_lower);
}

constexpr std::string_view kVssStore = "{3808876b-c176-4e48-b7ae-04046e6cc752}";

// lower(name).find(kVssStore) != npos. The GUID opens with a brace, which has no case, so
// only the braces a name holds are tried (memchr): a case-blind search at every byte of
// a million names was 6 % of the scan.
bool holds_vss_guid(std::string_view name) {
    for (auto at = name.find('{'); at != std::string_view::npos; at = name.find('{', at + 1))
        if (equals_lower(name.substr(at, kVssStore.size()), kVssStore)) return true;
    return false;
}

// System files with fixed record numbers (NTFS 3.x) that the file system never lets a
// defragmenter move. $Volume, $AttrDef, the root and $UpCase are movable streams.
const char* pinned_system_file(std::uint64_t record) {
    switch (record) {
        case 1: return "$MFTMirr";
        case 2: return "$LogFile";
        case 6: return "$Bitmap";
        case 7: return "$Boot";
        case 8: return "$BadClus";
        case 9: return "$Secure";
        default: return nullptr;
    }
}

// Files Windows holds open whenever it runs. The reasons are literals because
// Stream::reason is a view.
struct InUse {
    std::string_view path;  ///< lower case, as path_of gives it
    const char* reason;  // a literal: Stream::reason points at it
};
constexpr InUse kInUse[] = {
    {"\\pagefile.sys", "pagefile.sys is in use by Windows whenever it runs"},
    {"\\hiberfil.sys", "hiberfil.sys is in use by Windows whenever it runs"},
    {"\\swapfile.sys", "swapfile.sys is in use by Windows whenever it runs"},
};

// Whether a path made of `name` and its ancestors' names could match a rule of
// classify_placement. Paths cost a lookup per directory level and a copy, and on a volume of
// a million files nearly no file is one a rule names: only these are given a path. The
// rules match whole paths ending in one of the names below, or paths holding the VSS
// GUID, which holds no backslash and so lies within one name: the file's own, or (when
// `guid_parents`) an ancestor's.
bool may_match(std::string_view name, bool guid_parents) {
    static constexpr std::string_view kNames[] = {"$usnjrnl", "$objid", "pagefile.sys", "hiberfil.sys",
                                                  "swapfile.sys"};
    if (guid_parents || holds_vss_guid(name)) return true;
    return std::ranges::any_of(kNames, [&](std::string_view n) { return equals_lower(name, n); });
}

// Whether a file whose name holds the VSS GUID has files below it.
bool vss_guid_in_a_parent(const VolumeMap& volume) {
    std::vector<std::uint64_t> guid_records;  // sorted: files are
    for (const FileEntry& f : volume.files)
        if (holds_vss_guid(f.name)) guid_records.push_back(f.mft_record);
    if (guid_records.empty()) return false;
    return std::ranges::any_of(volume.files,
                               [&](const FileEntry& f) { return std::ranges::binary_search(guid_records, f.parent); });
}

}  // namespace

void classify_placement(VolumeMap& volume) {
    const bool guid_parents = vss_guid_in_a_parent(volume);
    // Streams and files are both in record order: a cursor finds each stream's file.
    auto file = volume.files.begin();
    for (Stream& s : volume.streams) {
        while (file != volume.files.end() && file->mft_record < s.mft_record) ++file;
        s.placement = Placement::Movable;
        s.reason = {};
        if (s.mft_record == 0) {
            // $MFT's first extent is fixed by the boot sector; its $BITMAP is pinned too.
            // Later $MFT extents can move on Windows, but only through the MFT-aware path,
            // so guestfrag treats the whole $MFT as unmovable and pins its first extent.
            s.placement = Placement::Unmovable;
            s.reason = s.type == static_cast<std::uint32_t>(AttrType::Bitmap) ? "$MFT::$BITMAP" : "$MFT";
        } else if (const char* name = pinned_system_file(s.mft_record)) {
            s.placement = Placement::Unmovable;
            s.reason = name;
        } else if (file != volume.files.end() && file->mft_record == s.mft_record &&
                   may_match(file->name, guid_parents)) {
            const std::string path = lower(volume.path_of(s.mft_record));
            if (path == "\\$extend\\$usnjrnl" || path == "\\$extend\\$objid") {
                s.placement = Placement::Unmovable;
                s.reason = path == "\\$extend\\$usnjrnl" ? "$Extend\\$UsnJrnl" : "$Extend\\$ObjId";
            } else if (const auto in_use = std::ranges::find(kInUse, path, &InUse::path);
                       in_use != std::end(kInUse)) {
                s.placement = Placement::Excluded;
                s.reason = in_use->reason;
            } else if (path.starts_with("\\system volume information\\") &&
                       path.find(kVssStore) != std::string::npos) {
                s.placement = Placement::Excluded;
                s.reason = "volume shadow copy store";
            }
        }
    }
    volume.unmovable.clear();
    for (const Stream& s : volume.streams) {
        if (s.placement != Placement::Unmovable) continue;
        const bool mft_data = s.mft_record == 0 && s.type == static_cast<std::uint32_t>(AttrType::Data);
        for (const Extent& e : s.extents) {
            if (e.lcn == Extent::kSparse) continue;
            volume.unmovable.add(ClusterSet::interval_type::right_open(e.lcn, e.lcn + e.clusters));
            if (mft_data) break;  // only the first extent of $MFT is pinned (docs/design.md §3)
        }
    }
}

}  // namespace guestfrag::ntfs
