// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/model/paths.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace guestfrag {

namespace {

[[nodiscard]] char fold(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Appends `text` folded character by character: '/' → '\\', ASCII upper → lower.
void append_folded(std::string& out, std::string_view text) {
    for (const char c : text) out += c == '/' ? '\\' : fold(c);
}

/// Names compared as fold_trace_path compares them (byte order after ASCII folding).
[[nodiscard]] bool folded_less(std::string_view a, std::string_view b) noexcept {
    return std::ranges::lexicographical_compare(a, b, [](char x, char y) {
        return static_cast<unsigned char>(fold(x)) < static_cast<unsigned char>(fold(y));
    });
}

}  // namespace

std::string fold_trace_path(std::string_view path) {
    std::string out;
    out.reserve(path.size() + 1);
    if (path.empty() || (path.front() != '\\' && path.front() != '/')) out += '\\';
    append_folded(out, path);
    while (out.size() > 1 && out.back() == '\\') out.pop_back();
    return out;
}

// A file's path is its parent directory's (computed once per directory with
// VolumeMap::path_of) plus its name, which is what path_of gives, without walking to the
// root for every file. Files whose parent is missing or an orphan itself (corrupt maps)
// take path_of directly.
std::unordered_map<std::string, std::uint64_t> index_paths(const VolumeMap& volume) {
    std::unordered_map<std::string, std::uint64_t> records;
    records.reserve(volume.files.size());
    std::unordered_map<std::uint64_t, std::string> directories;  // record → folded path, "" for the root
    directories.emplace(kRootRecord, "");
    for (const FileEntry& f : volume.files) {
        if (f.mft_record == kRootRecord) {
            records.emplace("\\", f.mft_record);
            continue;
        }
        auto dir = directories.find(f.parent);
        if (dir == directories.end()) {
            const FileEntry* parent = volume.find_file(f.parent);
            if (parent != nullptr && f.parent != f.mft_record)
                dir = directories.emplace(f.parent, fold_trace_path(volume.path_of(f.parent))).first;
        }
        if (dir == directories.end() || dir->second.starts_with("\\<orphan>")) {
            records.emplace(fold_trace_path(volume.path_of(f.mft_record)), f.mft_record);
            continue;
        }
        std::string path = dir->second;
        path += '\\';
        append_folded(path, f.name);
        records.emplace(std::move(path), f.mft_record);
    }
    return records;
}

std::vector<std::uint64_t> path_walk(const VolumeMap& volume) {
    const auto& files = volume.files;
    // Every directory's entries as one contiguous range: files sorted by (parent, name).
    std::vector<std::size_t> entries(files.size());
    std::iota(entries.begin(), entries.end(), std::size_t{0});
    std::ranges::sort(entries, [&](std::size_t a, std::size_t b) {
        const FileEntry& x = files[a];
        const FileEntry& y = files[b];
        if (x.parent != y.parent) return x.parent < y.parent;
        if (folded_less(x.name, y.name)) return true;
        if (folded_less(y.name, x.name)) return false;
        return x.mft_record < y.mft_record;
    });
    // Iterator pairs rather than ranges::subrange, whose members clang 14 cannot take from
    // libstdc++ 12's concepts (the fuzz build).
    using Range =
        std::pair<std::vector<std::size_t>::const_iterator, std::vector<std::size_t>::const_iterator>;
    const auto children = [&](std::uint64_t record) -> Range {
        const auto by_parent = [&](std::size_t i) { return files[i].parent; };
        return {std::ranges::lower_bound(entries, record, {}, by_parent),
                std::ranges::upper_bound(entries, record, {}, by_parent)};
    };

    std::vector<std::uint64_t> walk;
    walk.reserve(files.size() + 1);
    // files is sorted by record: a record's first entry marks it met, so a file with two
    // names (hard links) is walked where the first is met.
    std::vector<char> met(files.size(), 0);
    const auto meet = [&](std::uint64_t record) {
        const auto it = std::ranges::lower_bound(files, record, {}, &FileEntry::mft_record);
        if (it != files.end() && it->mft_record == record) {
            char& m = met[static_cast<std::size_t>(it - files.begin())];
            if (m) return;
            m = 1;
        }
        walk.push_back(record);
    };
    // An explicit stack of entry ranges, not recursion: directory depth is the volume's to
    // choose. A directory is expanded once, so a parent loop in a corrupt map ends.
    std::vector<char> expanded(files.size(), 0);
    std::vector<Range> stack;
    meet(kRootRecord);
    stack.push_back(children(kRootRecord));
    while (!stack.empty()) {
        Range& top = stack.back();
        if (top.first == top.second) {
            stack.pop_back();
            continue;
        }
        const std::size_t f = *top.first++;
        if (files[f].mft_record == kRootRecord) continue;  // the root is its own parent
        meet(files[f].mft_record);
        if (files[f].directory && !expanded[f]) {
            expanded[f] = 1;
            stack.push_back(children(files[f].mft_record));
        }
    }
    return walk;
}

std::vector<std::size_t> path_order(const VolumeMap& volume) {
    // The walk first: its working sets are gone before the order's are made (at ten million
    // files each is tens of megabytes).
    return path_order(volume, path_walk(volume));
}

std::vector<std::size_t> path_order(const VolumeMap& volume, std::span<const std::uint64_t> walk) {
    const auto& streams = volume.streams;
    std::vector<std::size_t> order;
    order.reserve(streams.size());
    std::vector<char> placed(streams.size(), 0);
    for (const std::uint64_t record : walk) {
        auto it = std::ranges::lower_bound(streams, record, {}, &Stream::mft_record);
        for (; it != streams.end() && it->mft_record == record; ++it) {
            const auto i = static_cast<std::size_t>(it - streams.begin());
            if (!placed[i]) {
                placed[i] = 1;
                order.push_back(i);
            }
        }
    }
    for (std::size_t i = 0; i < streams.size(); ++i)
        if (!placed[i]) order.push_back(i);
    return order;
}

}  // namespace guestfrag
