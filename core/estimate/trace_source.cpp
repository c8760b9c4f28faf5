// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/trace_source.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/estimate/io_trace.hpp"
#include "core/estimate/layout_ini.hpp"
#include "core/estimate/prefetch.hpp"
#include "core/ntfs/file_reader.hpp"

namespace guestfrag {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefetchDir = "\\Windows\\Prefetch";
constexpr std::string_view kLayoutIni = "\\Windows\\Prefetch\\Layout.ini";

// Trace sources are lists of names; a larger file is not one.
constexpr std::uint64_t kMaxTraceBytes = ntfs::VolumeFiles::kDefaultMaxBytes;

// The rest of a host trace file that is not an IO trace: a list of paths, or a Prefetch file.
std::vector<std::byte> read_host_file(std::ifstream& in, const std::string& source) {
    std::error_code ec;
    const auto size = fs::file_size(source, ec);
    if (ec) throw Error(ErrorKind::Io, "cannot read trace file " + source + ": " + ec.message());
    if (size > kMaxTraceBytes)
        throw Error(ErrorKind::Unsupported, "trace file " + source + " holds " + std::to_string(size) +
                                                " bytes, more than the " + std::to_string(kMaxTraceBytes) +
                                                "-byte limit");
    std::vector<std::byte> content(size);
    if (!in.read(reinterpret_cast<char*>(content.data()), static_cast<std::streamsize>(size)))
        throw Error(ErrorKind::Io, "cannot read trace file " + source);
    return content;
}

TraceSource from_host_file(const std::string& source, const VolumeMap& volume) {
    std::ifstream in = open_trace_file(source);
    if (std::optional<std::vector<Io>> ios = read_io_trace(in, source))
        return {std::make_shared<const IoTraceReplay>(volume, std::move(*ios)), {}};
    const std::vector<std::byte> content = read_host_file(in, source);
    if (looks_like_prefetch(content))
        return {nullptr, prefetch_volume_paths(read_prefetch(fs::path(source)), volume.serial)};
    return {nullptr, parse_path_list(content, "trace file " + source)};
}

// The guest's own files, through a read-only mount of the volume the map describes. The
// partition may be longer than the file system; reading up to the disk's end is harmless.
ntfs::VolumeFiles open_volume(const DiskImage& image, const VolumeMap& volume) {
    if (volume.partition_offset >= image.size())
        throw Error(ErrorKind::Internal, "volume offset " + std::to_string(volume.partition_offset) +
                                             " lies past the end of the disk");
    return ntfs::VolumeFiles(image, volume.partition_offset, image.size() - volume.partition_offset);
}

std::vector<std::string> from_image_layout(const DiskImage& image, const VolumeMap& volume) {
    const ntfs::VolumeFiles files = open_volume(image, volume);
    return parse_path_list(files.read_file(kLayoutIni), std::string(kLayoutIni));
}

bool has_pf_suffix(const std::string& name) {
    if (name.size() < 3) return false;
    std::string tail = name.substr(name.size() - 3);
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return std::tolower(c); });
    return tail == ".pf";
}

std::vector<std::string> from_image_prefetch(const DiskImage& image, const VolumeMap& volume) {
    const ntfs::VolumeFiles files = open_volume(image, volume);
    std::vector<ntfs::DirectoryEntry> entries;
    try {
        entries = files.list_directory(kPrefetchDir);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::NotFound) throw;
        throw Error(ErrorKind::NotFound,
                    "the volume has no " + std::string(kPrefetchDir) +
                        " directory (not a Windows system volume, or prefetching is off)");
    }

    struct Program {
        std::string name;
        PrefetchFile pf;
    };
    std::vector<Program> programs;
    for (const ntfs::DirectoryEntry& entry : entries) {
        if (entry.directory || !has_pf_suffix(entry.name)) continue;
        const std::string path = std::string(kPrefetchDir) + "\\" + entry.name;
        programs.push_back({path, read_prefetch(files.read_file(path), path)});
    }
    if (programs.empty())
        throw Error(ErrorKind::Unsupported, std::string(kPrefetchDir) + " holds no .pf files");
    // Oldest run first, as the programs started; the listing's name order breaks ties.
    std::stable_sort(programs.begin(), programs.end(),
                     [](const Program& a, const Program& b) { return a.pf.last_run < b.pf.last_run; });

    std::vector<std::string> paths;
    for (const Program& program : programs) {
        auto more = prefetch_volume_paths(program.pf, volume.serial);
        paths.insert(paths.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    return paths;
}

}  // namespace

TraceSource read_trace_source(const std::string& source, const DiskImage& image, const VolumeMap& volume) {
    TraceSource read;
    if (source == "@layout") {
        read.paths = from_image_layout(image, volume);
    } else if (source == "@prefetch") {
        read.paths = from_image_prefetch(image, volume);
    } else if (source.starts_with('@') && !fs::exists(fs::path(source))) {
        throw Error(ErrorKind::Unsupported,
                    "unknown trace source " + source + " (use @prefetch, @layout or a file name)");
    } else {
        read = from_host_file(source, volume);
    }
    if (!read.io_trace && read.paths.empty())
        throw Error(ErrorKind::Unsupported, "trace " + source + " names no files");
    return read;
}

std::vector<std::string> load_trace(const std::string& source, const DiskImage& image,
                                    const VolumeMap& volume) {
    TraceSource read = read_trace_source(source, image, volume);
    if (!read.io_trace) return std::move(read.paths);
    std::vector<std::string> paths = read.io_trace->files_read(volume);
    if (paths.empty()) throw Error(ErrorKind::Unsupported, "trace " + source + " names no files");
    return paths;
}

}  // namespace guestfrag
