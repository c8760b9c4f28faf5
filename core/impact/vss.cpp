// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/impact/vss.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>

namespace guestfrag {

namespace {

// The VSS provider's GUID: the catalog file is named exactly this, and each shadow copy's
// diff area is "{<shadow copy GUID>}" followed by it.
constexpr std::string_view kVssGuid = "{3808876b-c176-4e48-b7ae-04046e6cc752}";

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

/// "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}": braces, hex digits and dashes at GUID places.
bool is_guid(std::string_view s) {
    if (s.size() != 38 || s.front() != '{' || s.back() != '}') return false;
    for (std::size_t i = 1; i < 37; ++i) {
        const bool dash = i == 9 || i == 14 || i == 19 || i == 24;
        if (dash ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
}

bool is_store_name(std::string_view name) {
    return name.size() == 2 * kVssGuid.size() && is_guid(name.substr(0, kVssGuid.size())) &&
           iequals(name.substr(kVssGuid.size()), kVssGuid);
}

}  // namespace

VssFigures find_shadow_copies(const VolumeMap& volume) {
    VssFigures out;
    out.cluster_size = volume.cluster_size;
    const auto svi = std::find_if(volume.files.begin(), volume.files.end(), [](const FileEntry& f) {
        return f.directory && f.parent == kRootRecord && iequals(f.name, "System Volume Information");
    });
    if (svi == volume.files.end()) return out;
    std::map<std::uint64_t, std::string> stores;  // by record: one name per file (hard links)
    for (const FileEntry& f : volume.files) {
        if (f.parent != svi->mft_record || f.directory) continue;
        if (iequals(f.name, kVssGuid)) out.catalog = true;
        if (is_store_name(f.name)) stores.emplace(f.mft_record, f.name);
    }
    out.store_files = stores.size();
    for (const auto& [record, name] : stores) out.store_names.push_back(name);
    for (const Stream& s : volume.streams)
        if (stores.contains(s.mft_record))
            out.store_bytes += static_cast<std::uint64_t>(s.allocated_clusters()) * volume.cluster_size;
    return out;
}

}  // namespace guestfrag
