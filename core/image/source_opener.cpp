// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/source_opener.hpp"

#include <filesystem>

#include "core/image/nbd_uri.hpp"

namespace guestfrag {
namespace {

namespace fs = std::filesystem;

std::string normal(const std::string& path) { return fs::path(path).lexically_normal().string(); }

}  // namespace

std::shared_ptr<const ByteSource> FileOpener::open(const std::string& path) const {
    std::shared_ptr<const ByteSource> source;
    if (is_nbd_uri(path))
        source = NbdSource::open(path, nbd_timeout_);
    else
        source = FileSource::open(path);
    if (opened_) opened_(path);
    return source;
}

bool FileOpener::exists(const std::string& path) const {
    if (!is_nbd_uri(path)) return fs::exists(path);
    // An export exists when the server lets us open it; one connection per question.
    try {
        (void)NbdSource::open(path, nbd_timeout_);
        return true;
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::NotFound) return false;
        throw;
    }
}

bool FileOpener::is_readable(const std::string& path) const {
    if (is_nbd_uri(path)) return exists(path);
    return fs::is_regular_file(path) || fs::is_block_file(path);
}

std::string FileOpener::identity(const std::string& path) const {
    if (is_nbd_uri(path)) return path;
    std::error_code ec;
    const auto canon = fs::canonical(path, ec);
    return ec ? path : canon.string();
}

const SourceOpener& file_opener() noexcept {
    static const FileOpener opener;
    return opener;
}

void MemoryOpener::add(const std::string& name, std::vector<std::byte> bytes) {
    const std::string key = normal(name);
    files_[key] = std::make_shared<MemorySource>(key, std::make_shared<const std::vector<std::byte>>(std::move(bytes)));
}

void MemoryOpener::add(std::shared_ptr<const ByteSource> source) {
    if (!source) throw Error(ErrorKind::Internal, "memory opener given no source");
    files_[normal(source->name())] = std::move(source);
}

std::shared_ptr<const ByteSource> MemoryOpener::open(const std::string& path) const {
    const auto it = files_.find(normal(path));
    if (it == files_.end()) throw Error(ErrorKind::NotFound, "no such file: " + path);
    return it->second;
}

bool MemoryOpener::exists(const std::string& path) const { return files_.contains(normal(path)); }

std::string MemoryOpener::identity(const std::string& path) const { return normal(path); }

}  // namespace guestfrag
