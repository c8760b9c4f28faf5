// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/layout_ini.hpp"

#include <iconv.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "core/error.hpp"

namespace guestfrag {
namespace {

struct IconvCloser {
    void operator()(void* cd) const noexcept { iconv_close(static_cast<iconv_t>(cd)); }
};

// `content` in `charset` as UTF-8, validated by glibc's iconv (UTF-8 → UTF-8 checks it too).
std::string to_utf8(std::span<const std::byte> content, const char* charset, const std::string& name) {
    const iconv_t raw = iconv_open("UTF-8", charset);
    if (raw == reinterpret_cast<iconv_t>(static_cast<std::intptr_t>(-1)))
        throw Error(ErrorKind::Internal, std::string("iconv cannot convert from ") + charset);
    const std::unique_ptr<void, IconvCloser> cd(raw);
    // UTF-16 → UTF-8 grows at most 3/2 (a unit of 2 bytes becomes up to 3); UTF-8 stays.
    std::string out(content.size() / 2 * 3 + content.size() % 2 + 4, '\0');
    // glibc's iconv takes char** for input it never writes.
    char* in = const_cast<char*>(reinterpret_cast<const char*>(content.data()));
    std::size_t in_left = content.size();
    char* dest = out.data();
    std::size_t out_left = out.size();
    if (iconv(raw, &in, &in_left, &dest, &out_left) == static_cast<std::size_t>(-1)) {
        const auto at = content.size() - in_left;
        throw Error(ErrorKind::Unsupported, name + " is not valid " + charset + " text (byte " +
                                                std::to_string(at) + "): " + std::strerror(errno));
    }
    out.resize(out.size() - out_left);
    return out;
}

bool starts_with(std::span<const std::byte> content, std::initializer_list<unsigned char> prefix) {
    if (content.size() < prefix.size()) return false;
    return std::equal(prefix.begin(), prefix.end(), content.begin(),
                      [](unsigned char a, std::byte b) { return std::byte{a} == b; });
}

// Decodes by byte-order mark; without one the content must be UTF-8 (ASCII included).
std::string decode(std::span<const std::byte> content, const std::string& name) {
    if (starts_with(content, {0xFF, 0xFE})) return to_utf8(content.subspan(2), "UTF-16LE", name);
    if (starts_with(content, {0xFE, 0xFF})) return to_utf8(content.subspan(2), "UTF-16BE", name);
    if (starts_with(content, {0xEF, 0xBB, 0xBF})) content = content.subspan(3);
    return to_utf8(content, "UTF-8", name);
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
               return std::toupper(static_cast<unsigned char>(a)) ==
                      std::toupper(static_cast<unsigned char>(b));
           });
}

std::string_view trim(std::string_view text) {
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!text.empty() && blank(text.front())) text.remove_prefix(1);
    while (!text.empty() && blank(text.back())) text.remove_suffix(1);
    return text;
}

bool has_drive(std::string_view path) {
    return path.size() >= 2 && std::isalpha(static_cast<unsigned char>(path[0])) != 0 && path[1] == ':';
}

// Ini furniture of Layout.ini ("[OptimalLayoutFile]", "Version=1") and comments.
bool is_not_a_path(std::string_view line) {
    if (line.front() == ';' || line.front() == '#') return true;
    if (line.front() == '[' && line.back() == ']') return true;
    const auto equals = line.find('=');
    if (equals == std::string_view::npos) return false;
    // "key=value" has no separator or drive colon before '=': "\\dir\\a=b.txt" is a path.
    return line.substr(0, equals).find_first_of("\\/:") == std::string_view::npos;
}

// Length of a leading "\\DEVICE\\HARDDISKVOLUME1" or "\\VOLUME{guid}": the prefetcher's
// names for the volume a file is on. 0 when there is none.
std::size_t device_prefix_length(std::string_view path) {
    constexpr std::string_view device = "\\DEVICE\\";
    if (iequals_prefix(path, device)) return std::min(path.find('\\', device.size()), path.size());
    if (iequals_prefix(path, "\\VOLUME{")) {
        const auto close = path.find('}');
        return close == std::string_view::npos ? path.size() : close + 1;
    }
    return 0;
}

}  // namespace

std::string to_volume_path(std::string_view windows_path) {
    std::string path(trim(windows_path));
    if (path.empty()) return path;
    std::replace(path.begin(), path.end(), '/', '\\');

    // Win32 and NT namespace escapes: "\\\\?\\C:\\x", "\\??\\C:\\x", "\\\\.\\x".
    for (const std::string_view escape : {"\\\\?\\", "\\??\\", "\\\\.\\"})
        if (iequals_prefix(path, escape)) {
            path.erase(0, escape.size());
            break;
        }
    if (has_drive(path)) path.erase(0, 2);
    if (path.empty() || path.front() != '\\') path.insert(path.begin(), '\\');
    if (iequals_prefix(path, "\\GLOBALROOT\\")) path.erase(0, std::strlen("\\GLOBALROOT"));

    path.erase(0, device_prefix_length(path));
    if (path.empty() || path.front() != '\\') path.insert(path.begin(), '\\');
    while (path.size() > 1 && path.back() == '\\') path.pop_back();
    return path;
}

std::vector<std::string> parse_path_list(std::span<const std::byte> content, const std::string& name) {
    const std::string text = decode(content, name);
    if (text.find('\0') != std::string::npos)
        throw Error(ErrorKind::Unsupported, name + " is neither a prefetch file nor a text list of paths");

    std::vector<std::string> paths;
    std::string_view rest(text);
    while (!rest.empty()) {
        const auto end = rest.find('\n');
        const std::string_view line = trim(rest.substr(0, end));
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        if (line.empty() || is_not_a_path(line)) continue;
        paths.push_back(to_volume_path(line));
    }
    return paths;
}

}  // namespace guestfrag
