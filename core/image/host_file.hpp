// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/image/byte_source.hpp"

namespace guestfrag {

/// A container file (qcow2, VMDK extent, VHD, VHDX) as the format readers see it: a
/// shared ByteSource plus the bounds-checked reads they all need. A cheap value (copies
/// share the source); reads are safe from several threads.
class HostFile {
public:
    /// Opens the host file at `path` (FileSource::open and its errors: Error(NotFound)
    /// when missing, Error(Unsupported) when not a regular file or block device,
    /// Error(Io) otherwise).
    explicit HostFile(std::string path);

    /// Reads `source` (non-null; Error(Internal) otherwise).
    explicit HostFile(std::shared_ptr<const ByteSource> source);

    [[nodiscard]] const std::string& path() const noexcept { return source_->name(); }
    [[nodiscard]] std::uint64_t size() const noexcept { return source_->size(); }
    [[nodiscard]] const ByteSource& source() const noexcept { return *source_; }
    [[nodiscard]] const std::shared_ptr<const ByteSource>& shared_source() const noexcept { return source_; }

    /// Reads exactly out.size() bytes at `offset`. A range past the end of the file means
    /// a table points outside it: Error(Corrupt, "<what> at offset N lies past the end of
    /// the file (S bytes)"). Read failures: Error(Io).
    void read_exact(std::uint64_t offset, std::span<std::byte> out, const char* what) const;

    /// Like read_exact, but bytes past the end of the file read as zero (formats whose
    /// last cluster may be short, e.g. qcow2 compressed clusters at the end).
    void read_padded(std::uint64_t offset, std::span<std::byte> out) const;

private:
    std::shared_ptr<const ByteSource> source_;
};

}  // namespace guestfrag
