// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/host_file.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace guestfrag {

HostFile::HostFile(std::string path) : source_(FileSource::open(std::move(path))) {}

HostFile::HostFile(std::shared_ptr<const ByteSource> source) : source_(std::move(source)) {
    if (!source_) throw Error(ErrorKind::Internal, "host file without a source");
}

void HostFile::read_exact(std::uint64_t offset, std::span<std::byte> out, const char* what) const {
    const std::uint64_t size = source_->size();
    if (offset > size || out.size() > size - offset)
        throw Error(ErrorKind::Corrupt, std::string(what) + " at offset " + std::to_string(offset) +
                                            " lies past the end of the file (" + std::to_string(size) + " bytes)");
    read_fully(*source_, offset, out);
}

void HostFile::read_padded(std::uint64_t offset, std::span<std::byte> out) const {
    const std::uint64_t size = source_->size();
    const std::uint64_t available = offset >= size ? 0 : std::min<std::uint64_t>(out.size(), size - offset);
    read_fully(*source_, offset, out.first(static_cast<std::size_t>(available)));
    std::memset(out.data() + available, 0, out.size() - available);
}

}  // namespace guestfrag
