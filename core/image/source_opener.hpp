// SPDX-License-Identifier: GPL-2.0-or-later
// How readers reach the other files of a disk: the extent files a VMDK descriptor names
// and the parents of differencing layers. Like LevelDB's Env, it maps a path to a source,
// so a whole chain or a multi-extent VMDK can be opened from memory. Readers still work
// out which paths to try (relative to the child's directory, ...); the opener only
// answers for a path.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/image/byte_source.hpp"
#include "core/image/nbd_source.hpp"

namespace guestfrag {

/// Path → ByteSource. Implementations are immutable once set up and safe to share.
class SourceOpener {
public:
    virtual ~SourceOpener() = default;
    SourceOpener() = default;
    SourceOpener(const SourceOpener&) = delete;
    SourceOpener& operator=(const SourceOpener&) = delete;

    /// Opens `path`. Shared ownership because the memory opener hands out the same source
    /// on every call, and a reader's HostFile values share theirs. Throws
    /// Error(NotFound, "no such file: <path>"), Error(Unsupported) for what is not a
    /// readable file, Error(Io).
    [[nodiscard]] virtual std::shared_ptr<const ByteSource> open(const std::string& path) const = 0;

    /// Whether anything exists at `path` (a VMDK extent name is tried while it does not).
    [[nodiscard]] virtual bool exists(const std::string& path) const = 0;

    /// Whether `path` is something open() reads (a regular file or block device): parent
    /// candidates that are not are skipped.
    [[nodiscard]] virtual bool is_readable(const std::string& path) const = 0;

    /// A key that is equal for two names of the same file (its canonical path, or the name
    /// itself when that cannot be resolved), to find loops in a parent chain.
    [[nodiscard]] virtual std::string identity(const std::string& path) const = 0;
};

/// The host file system (FileSource::open and std::filesystem queries) and NBD servers: a
/// path that is an NBD URI (is_nbd_uri) is opened as an NbdSource, so a remote image's
/// parents and extents resolve to exports of the same server (sibling_path).
class FileOpener final : public SourceOpener {
public:
    /// `nbd_timeout` bounds each connection's handshake and each of its requests;
    /// `opened`, when set, is told the path of every file (or URI) open() opens.
    explicit FileOpener(std::chrono::milliseconds nbd_timeout = kDefaultNbdTimeout,
                        std::function<void(const std::string&)> opened = {})
        : nbd_timeout_(nbd_timeout), opened_(std::move(opened)) {}

    [[nodiscard]] std::shared_ptr<const ByteSource> open(const std::string& path) const override;
    [[nodiscard]] bool exists(const std::string& path) const override;
    [[nodiscard]] bool is_readable(const std::string& path) const override;
    [[nodiscard]] std::string identity(const std::string& path) const override;

private:
    std::chrono::milliseconds nbd_timeout_;
    std::function<void(const std::string&)> opened_;
};

/// The opener the path-taking entry points (open_image(path), open_vmdk(path), ...) use.
[[nodiscard]] const SourceOpener& file_opener() noexcept;

/// Files held in memory by name. Names are compared after lexical normalisation
/// ("dir/./a" and "dir/b/../a" are "dir/a"), which is how readers join a child's directory
/// with a recorded name.
class MemoryOpener final : public SourceOpener {
public:
    /// Adds (or replaces) the file `name` holding `bytes`.
    void add(const std::string& name, std::vector<std::byte> bytes);
    /// Adds (or replaces) a source under its own name(), e.g. a FaultySource.
    void add(std::shared_ptr<const ByteSource> source);

    [[nodiscard]] std::shared_ptr<const ByteSource> open(const std::string& path) const override;
    [[nodiscard]] bool exists(const std::string& path) const override;
    [[nodiscard]] bool is_readable(const std::string& path) const override { return exists(path); }
    [[nodiscard]] std::string identity(const std::string& path) const override;

private:
    std::map<std::string, std::shared_ptr<const ByteSource>> files_;
};

}  // namespace guestfrag
