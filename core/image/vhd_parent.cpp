// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vhd_parent.hpp"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "core/image/nbd_uri.hpp"

namespace guestfrag::vhd {
namespace {

namespace fs = std::filesystem;

/// The paths a parent's locators record, decoded to UTF-8 with Windows separators kept.
struct RecordedPaths {
    std::string relative;  ///< W2ru, else Wi2r
    std::string absolute;  ///< W2ku, else Wi2k, else the path of a MacX file URL
};

std::string trim_nul(std::string text) {
    if (const auto nul = text.find('\0'); nul != std::string::npos) text.resize(nul);
    return text;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// "file://localhost/a%20b/p.vhd" or "file:///a%20b/p.vhd" → "/a b/p.vhd"; "" if not a file URL.
std::string file_url_path(const std::string& url) {
    constexpr std::string_view scheme = "file://";
    if (url.compare(0, scheme.size(), scheme) != 0) return {};
    const auto slash = url.find('/', scheme.size());
    if (slash == std::string::npos) return {};
    std::string path;
    for (std::size_t i = slash; i < url.size(); ++i) {
        if (url[i] == '%' && i + 2 < url.size() && hex_value(url[i + 1]) >= 0 && hex_value(url[i + 2]) >= 0) {
            path += static_cast<char>(hex_value(url[i + 1]) * 16 + hex_value(url[i + 2]));
            i += 2;
        } else {
            path += url[i];
        }
    }
    return trim_nul(path);
}

std::string decode_locator(const HostFile& file, const Locator& locator, std::size_t index) {
    if (locator.data_length > kMaxLocatorBytes)
        throw Error(ErrorKind::Corrupt, "vhd: parent locator " + std::to_string(index) + " holds " +
                                            std::to_string(locator.data_length) + " bytes (at most " +
                                            std::to_string(kMaxLocatorBytes) + " expected)");
    std::vector<std::byte> data(locator.data_length);
    const std::string what = "vhd parent locator " + std::to_string(index) + " data";
    file.read_exact(locator.data_offset, data, what.c_str());
    switch (static_cast<LocatorCode>(locator.code)) {
        case LocatorCode::W2ru:
        case LocatorCode::W2ku:
            return utf16_to_utf8(data, false);
        case LocatorCode::Wi2r:
        case LocatorCode::Wi2k:
            return trim_nul(std::string(reinterpret_cast<const char*>(data.data()), data.size()));
        case LocatorCode::Mac:
        case LocatorCode::MacX:
            return file_url_path(std::string(reinterpret_cast<const char*>(data.data()), data.size()));
        case LocatorCode::None:
            break;
    }
    return {};
}

RecordedPaths recorded_paths(const HostFile& file, const DynamicHeader& header) {
    // Preference among equivalent locators: the current Windows codes first, then the
    // deprecated ASCII ones, then the Mac URL.
    std::string w2ru, wi2r, w2ku, wi2k, mac;
    for (std::size_t i = 0; i < header.locators.size(); ++i) {
        const Locator& locator = header.locators[i];
        std::string* slot = nullptr;
        switch (static_cast<LocatorCode>(locator.code)) {
            case LocatorCode::W2ru:
                slot = &w2ru;
                break;
            case LocatorCode::Wi2r:
                slot = &wi2r;
                break;
            case LocatorCode::W2ku:
                slot = &w2ku;
                break;
            case LocatorCode::Wi2k:
                slot = &wi2k;
                break;
            case LocatorCode::Mac:
            case LocatorCode::MacX:
                slot = &mac;
                break;
            case LocatorCode::None:
                break;
        }
        // Unknown platform codes are skipped: other platforms' locators are not ours to read.
        if (slot == nullptr || locator.data_length == 0 || !slot->empty()) continue;
        *slot = decode_locator(file, locator, i);
    }
    RecordedPaths paths;
    paths.relative = !w2ru.empty() ? w2ru : wi2r;
    paths.absolute = !w2ku.empty() ? w2ku : !wi2k.empty() ? wi2k : mac;
    return paths;
}

std::string to_host_separators(std::string path) {
    std::replace(path.begin(), path.end(), '\\', '/');
    return path;
}

}  // namespace

ParentLink parent_link(const HostFile& file, const DynamicHeader& header) {
    const RecordedPaths paths = recorded_paths(file, header);
    const auto in_child_dir = [&](const std::string& relative) {
        return normal_sibling_path(file.path(), to_host_separators(relative));
    };

    std::vector<std::string> candidates;
    const auto add = [&](std::string candidate) {
        if (!candidate.empty() &&
            std::find(candidates.begin(), candidates.end(), candidate) == candidates.end())
            candidates.push_back(std::move(candidate));
    };
    // A relative locator with a drive letter ("D:x.vhd") or a root ("\\x.vhd") is relative
    // to something other than the child's directory: not resolvable on this host.
    if (!paths.relative.empty() && paths.relative.find(':') == std::string::npos &&
        paths.relative.front() != '\\' && paths.relative.front() != '/')
        add(in_child_dir(paths.relative));
    // A Windows absolute path ("C:\...", "\\server\...") names nothing here; a POSIX one
    // (written by Linux and macOS tools) may.
    if (!paths.absolute.empty() && paths.absolute.front() == '/') add(paths.absolute);
    for (const std::string* recorded : {&paths.absolute, &header.parent_name})
        if (const std::string name = recorded_file_name(*recorded); !name.empty() && name != "." && name != "..")
            add(in_child_dir(name));

    ParentLink link;
    link.recorded = !paths.absolute.empty()   ? paths.absolute
                    : !paths.relative.empty() ? paths.relative
                    : !header.parent_name.empty()
                        ? header.parent_name
                        : "(no parent path recorded; parent id " + guid_text(header.parent_id) + ")";
    link.candidates = std::move(candidates);
    // Hyper-V and Virtual PC chain a differencing VHD only to another VHD.
    link.format = ImageFormat::Vhd;
    link.recorded_format = format_name(ImageFormat::Vhd);
    link.expected_identities = {guid_text(header.parent_id)};
    return link;
}

}  // namespace guestfrag::vhd
