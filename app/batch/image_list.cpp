// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/image_list.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/image/nbd_uri.hpp"

namespace guestfrag::batch {

namespace fs = std::filesystem;

std::optional<Shard> parse_shard(const std::string& text) {
    const auto slash = text.find('/');
    if (slash == std::string::npos) return std::nullopt;
    Shard s;
    const char* begin = text.data();
    const char* end = begin + text.size();
    if (std::from_chars(begin, begin + slash, s.index).ptr != begin + slash) return std::nullopt;
    if (std::from_chars(begin + slash + 1, end, s.count).ptr != end) return std::nullopt;
    if (s.count == 0 || s.index == 0 || s.index > s.count) return std::nullopt;
    return s;
}

std::uint64_t path_hash(const std::string& path) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char c : path) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

bool in_shard(const std::string& path, const Shard& shard) { return path_hash(path) % shard.count == shard.index - 1; }

std::map<std::string, std::string> output_paths(const std::vector<std::string>& images,
                                                const std::string& directory, const std::string& extension) {
    // An NBD image is named by its export.
    const auto stem = [](const std::string& image) {
        return fs::path(is_nbd_uri(image) ? nbd_export_name(image) : image).stem().string();
    };
    std::map<std::string, unsigned> stems;
    for (const std::string& image : images) ++stems[stem(image)];
    std::map<std::string, std::string> out;
    for (const std::string& image : images) {
        std::string name = stem(image);
        if (stems[name] > 1) {
            char suffix[10];
            std::snprintf(suffix, sizeof suffix, "-%08x", static_cast<unsigned>(path_hash(image) & 0xffffffffu));
            name += suffix;
        }
        out[image] = (fs::path(directory) / (name + "." + extension)).string();
    }
    return out;
}

bool is_inside(const std::string& path, const std::string& directory) {
    std::error_code ec;
    const fs::path dir = fs::weakly_canonical(directory, ec);
    if (ec) return false;
    const fs::path file = fs::weakly_canonical(path, ec);
    if (ec) return false;
    const auto [d, f] = std::mismatch(dir.begin(), dir.end(), file.begin(), file.end());
    return d == dir.end() && f != file.end();
}

bool looks_like_image(const std::string& file_name) {
    static const std::regex image(R"(.*\.(vmdk|vhd|vhdx|avhd|avhdx|qcow2|qcow|img|raw|dd)$)", std::regex::icase);
    static const std::regex extent(R"(.*-(flat|s\d{3}|f\d{3}|delta|sesparse|ctk)\.vmdk$)", std::regex::icase);
    return std::regex_match(file_name, image) && !std::regex_match(file_name, extent);
}

std::vector<std::string> expand_images(const std::vector<std::string>& arguments,
                                       const std::optional<std::string>& list) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    const auto add = [&](const fs::path& p) {
        std::string path = is_nbd_uri(p.native()) ? p.native() : fs::absolute(p).lexically_normal().string();
        if (seen.insert(path).second) out.push_back(std::move(path));
    };
    const auto expand = [&](const fs::path& p) {
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<fs::path> found;
            for (const auto& e : fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec))
                if (e.is_regular_file(ec) && looks_like_image(e.path().filename().string())) found.push_back(e.path());
            std::sort(found.begin(), found.end());
            for (const fs::path& f : found) add(f);
        } else {
            // Named explicitly: taken whatever its name; one that is missing or bad fails in
            // its own row and never stops the batch.
            add(p);
        }
    };
    for (const std::string& a : arguments) expand(a);
    if (list) {
        std::ifstream in(*list);
        if (!in) throw Error(ErrorKind::NotFound, *list + ": cannot read the image list");
        const fs::path base = fs::absolute(*list).parent_path();
        for (std::string line; std::getline(in, line);) {
            line = line.substr(0, line.find('#'));
            const auto not_space = [](unsigned char c) { return !std::isspace(c); };
            line.erase(line.begin(), std::find_if(line.begin(), line.end(), not_space));
            line.erase(std::find_if(line.rbegin(), line.rend(), not_space).base(), line.end());
            if (!line.empty()) expand(is_nbd_uri(line) ? fs::path(line) : base / line);
        }
    }
    return out;
}

std::string mount_point_of(const std::string& path) {
    if (is_nbd_uri(path)) return nbd_server(path);
    std::error_code ec;
    const std::string at = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
    // As df does: the longest mount point of this process's mount table that contains the
    // path. (Walking up while st_dev stays the same would pass bind mounts by.)
    std::ifstream table("/proc/self/mountinfo");
    std::string best = "/";
    for (std::string line; std::getline(table, line);) {
        std::istringstream fields(line);
        std::string id, parent, device, root, mount;
        if (!(fields >> id >> parent >> device >> root >> mount)) continue;
        // Octal escapes of the kernel's: \040 space, \011 tab, \012 newline, \134 backslash.
        std::string point;
        for (std::size_t i = 0; i < mount.size(); ++i) {
            if (mount[i] == '\\' && i + 3 < mount.size() && std::isdigit(static_cast<unsigned char>(mount[i + 1]))) {
                point += static_cast<char>(std::stoi(mount.substr(i + 1, 3), nullptr, 8));
                i += 3;
            } else {
                point += mount[i];
            }
        }
        const bool contains = point == "/" || at == point || at.starts_with(point + "/");
        if (contains && point.size() > best.size()) best = point;
    }
    return best;
}

}  // namespace guestfrag::batch
