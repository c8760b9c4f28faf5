// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/image/unique_fd.hpp"

namespace guestfrag {

/// A container file (qcow2, VMDK extent, VHD, VHDX) opened read-only, for format readers.
/// Reads go through pread(), so one HostFile serves several threads.
class HostFile {
public:
    /// Throws Error(NotFound) when missing, Error(Unsupported) when not a regular file or
    /// block device, Error(Io) otherwise.
    explicit HostFile(std::string path);

    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }

    /// Reads exactly out.size() bytes at `offset`. A range past the end of the file means
    /// a table points outside it: Error(Corrupt, "<what> at offset N lies past the end of
    /// the file (S bytes)"). OS failures: Error(Io).
    void read_exact(std::uint64_t offset, std::span<std::byte> out, const char* what) const;

    /// Like read_exact, but bytes past the end of the file read as zero (formats whose
    /// last cluster may be short, e.g. qcow2 compressed clusters at the end).
    void read_padded(std::uint64_t offset, std::span<std::byte> out) const;

private:
    std::string path_;
    UniqueFd fd_;
    std::uint64_t size_ = 0;
};

}  // namespace guestfrag
