// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/nbd_uri.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>

namespace guestfrag {
namespace {

/// The parts of an NBD URI that sibling_path and nbd_server need:
/// SCHEME "://" AUTHORITY PATH [ "?" QUERY ] [ "#" FRAGMENT ].
struct UriParts {
    std::string_view head;   ///< scheme "://" authority
    std::string_view path;   ///< "/" followed by the export name; may be empty
    std::string_view query;  ///< from '?' or '#' on, as written; may be empty
};

UriParts split(std::string_view uri) {
    UriParts parts;
    const std::size_t authority = uri.find("://") + 3;
    const std::size_t tail = uri.find_first_of("?#", authority);
    const std::string_view before = uri.substr(0, tail);
    const std::size_t slash = before.find('/', authority);
    parts.head = before.substr(0, slash);
    if (slash != std::string_view::npos) parts.path = before.substr(slash);
    if (tail != std::string_view::npos) parts.query = uri.substr(tail);
    return parts;
}

/// `name` as a URI path: every byte but the unreserved ones, '/' and the sub-delimiters
/// percent-encoded, so that a name a layer records ("a?socket=/x", "b#c") can never reach
/// the query of the URI it is joined into and send the lookup to another server.
std::string encode_path(std::string_view name) {
    static constexpr std::string_view kept = "-._~/!$&'()*+,;=:@";
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) != 0 || kept.find(c) != std::string_view::npos) {
            out += c;
        } else {
            out += '%';
            out += hex[u >> 4];
            out += hex[u & 15];
        }
    }
    return out;
}

}  // namespace

bool is_nbd_uri(std::string_view location) noexcept {
    static constexpr std::array<std::string_view, 6> schemes = {
        "nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://"};
    for (const std::string_view scheme : schemes)
        if (location.starts_with(scheme)) return true;
    return false;
}

std::string sibling_path(const std::string& child, const std::string& name) {
    namespace fs = std::filesystem;
    if (!is_nbd_uri(child)) return (fs::path(child).parent_path() / name).string();
    const UriParts parts = split(child);
    // The export name is the path without its leading '/'. Normalised as a relative path so
    // that ".." cannot climb above the export root.
    const fs::path export_name = fs::path(std::string(parts.path.empty() ? "/" : parts.path)).relative_path();
    const std::string relative =
        encode_path(std::string_view(name).substr(std::min(name.find_first_not_of('/'), name.size())));
    std::string joined = (export_name.parent_path() / relative).lexically_normal().generic_string();
    while (joined.starts_with("../")) joined.erase(0, 3);
    if (joined == "..") joined.clear();
    return std::string(parts.head) + "/" + joined + std::string(parts.query);
}

std::string normal_sibling_path(const std::string& child, const std::string& name) {
    const std::string path = sibling_path(child, name);
    return is_nbd_uri(path) ? path : std::filesystem::path(path).lexically_normal().string();
}

std::string nbd_export_name(const std::string& uri) {
    const std::string_view path = split(uri).path;
    return std::string(path.empty() ? path : path.substr(1));
}

std::string location_file_name(const std::string& location) {
    return std::filesystem::path(is_nbd_uri(location) ? nbd_export_name(location) : location)
        .filename()
        .string();
}

std::string nbd_server(const std::string& uri) {
    const UriParts parts = split(uri);
    std::string head(parts.head);
    // Credentials ("nbds://user@host") are not part of where the image is.
    const std::size_t authority = head.find("://") + 3;
    const std::size_t at = head.find('@', authority);
    if (at != std::string::npos) head.erase(authority, at + 1 - authority);
    // A unix or vsock socket path travels in the query; keep just that parameter.
    std::string socket;
    for (const std::string_view key : {"?socket=", "&socket="}) {
        const std::size_t s = parts.query.find(key);
        if (s == std::string_view::npos) continue;
        const std::string_view rest = parts.query.substr(s + 1);
        socket = "?" + std::string(rest.substr(0, rest.find_first_of("&#")));
        break;
    }
    return head + "/" + socket;
}

}  // namespace guestfrag
