// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/trace_workload.hpp"

#include <unordered_map>
#include <unordered_set>

#include "core/estimate/stream_ios.hpp"

namespace guestfrag {

namespace {

/// The root directory's record number on every NTFS volume.
constexpr std::uint64_t kRootRecord = 5;

/// Appends `text` folded character by character: '/' → '\\', ASCII upper → lower.
void append_folded(std::string& out, std::string_view text) {
    for (const char c : text) {
        if (c == '/')
            out += '\\';
        else if (c >= 'A' && c <= 'Z')
            out += static_cast<char>(c - 'A' + 'a');
        else
            out += c;
    }
}

/// Folded path → record for every file of the volume. A file's path is its parent
/// directory's (computed once per directory with VolumeMap::path_of) plus its name, which
/// is what path_of gives, without walking to the root for every file. Files whose parent
/// is missing or an orphan itself (corrupt maps) take path_of directly. With names
/// differing only in case (POSIX namespace) the lower record wins.
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

}  // namespace

std::string fold_trace_path(std::string_view path) {
    std::string out;
    out.reserve(path.size() + 1);
    if (path.empty() || (path.front() != '\\' && path.front() != '/')) out += '\\';
    append_folded(out, path);
    while (out.size() > 1 && out.back() == '\\') out.pop_back();
    return out;
}

TraceIos trace_ios(const VolumeMap& volume, std::span<const std::string> paths, std::uint64_t max_io) {
    check_max_io(max_io);

    const std::unordered_map<std::string, std::uint64_t> records = index_paths(volume);

    std::unordered_map<std::uint64_t, const Stream*> data;  // record → its unnamed $DATA
    for (const Stream& s : volume.streams)
        if (s.type == static_cast<std::uint32_t>(AttrType::Data) && s.name.empty())
            data.emplace(s.mft_record, &s);

    TraceIos result;
    std::unordered_set<std::string> reported;
    for (const std::string& path : paths) {
        ++result.outcome.paths;
        const auto file = records.find(fold_trace_path(path));
        if (file == records.end()) {
            ++result.outcome.missing;
            if (reported.insert(path).second) result.outcome.missing_paths.push_back(path);
            continue;
        }
        const auto stream = data.find(file->second);
        if (stream == data.end()) {
            ++result.outcome.without_data;
            continue;
        }
        ++result.outcome.read;
        append_stream_ios(volume, *stream->second, max_io, result.ios);
    }
    return result;
}

}  // namespace guestfrag
