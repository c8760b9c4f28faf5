// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/raw_image.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace guestfrag {

namespace {

/// Opens the host file, worded the raw reader's way: without the path, which the CLI
/// puts in front of the message.
std::shared_ptr<const ByteSource> open_raw_file(std::string path) {
    FileSource::OpenFailure failure;
    if (auto source = FileSource::try_open(std::move(path), failure)) return source;
    const int err = failure.error;
    switch (failure.step) {
        case FileSource::OpenFailure::Step::Open:
            // ENOTDIR: a leading path component is a file, so the named file cannot exist either.
            if (err == ENOENT || err == ENOTDIR) throw Error(ErrorKind::NotFound, "no such file");
            if (err == EISDIR) throw Error(ErrorKind::Unsupported, "is a directory");
            throw Error(ErrorKind::Io, "cannot open: " + errno_text(err));
        case FileSource::OpenFailure::Step::Stat: throw Error(ErrorKind::Io, "cannot stat: " + errno_text(err));
        case FileSource::OpenFailure::Step::NotFileOrDevice:
            if (failure.directory) throw Error(ErrorKind::Unsupported, "is a directory");
            throw Error(ErrorKind::Unsupported, "not a regular file or block device");
        case FileSource::OpenFailure::Step::Size:
            throw Error(ErrorKind::Io, "cannot get block device size: " + errno_text(err));
    }
    throw Error(ErrorKind::Internal, "unhandled open failure");
}

}  // namespace

RawImage::RawImage(std::string path) : RawImage(open_raw_file(std::move(path))) {}

RawImage::RawImage(std::shared_ptr<const ByteSource> source) : source_(std::move(source)) {
    if (!source_) throw Error(ErrorKind::Internal, "raw image without a source");
    const std::uint64_t size = source_->size();
    if (size == 0) throw Error(ErrorKind::Corrupt, "empty image (0 bytes)");
    Layer layer;
    layer.depth = 0;
    layer.path = source_->name();
    layer.format = ImageFormat::Raw;
    // Without hole information (a block device), every sector is "stored".
    layer.granule_size = source_->allocation_unit().value_or(512);
    layer.allocated = source_->stored_ranges(layer.granule_size);
    layer.growth_unit = layer.granule_size;
    const bool sparse = boost::icl::length(layer.allocated) < size;
    layer.provisioning = raw_provisioning(!sparse, layer.granule_size);
    // Holes read as zeros without the host (read()), but the kernel's read-ahead would still
    // run past the data into them and zero-fill page cache pages: 3.9 GB for a compact of
    // the 1M-file volume, a third of the CPU of the thread that hashes the input. The same
    // hint WritableRawFile gives for the output. What reads most of a disk reads large
    // pieces without the host's help: $MFT's scan 2 MiB, the copy 128 KiB, the proofs'
    // hashing up to 1 MiB.
    if (sparse) source_->avoid_read_ahead();
    // A raw disk is its own file: every stored range lies at its own offset.
    for (const auto& stored : layer.allocated)
        layer.host_extents.push_back({stored.lower(), stored.lower(), stored.upper() - stored.lower(), 0});
    layers_.push_back(std::move(layer));
}

std::vector<PhysicalFile> RawImage::physical_files(std::size_t layer) const {
    if (layer != 0) return {};
    return {source_->physical_layout()};
}

void RawImage::read(std::uint64_t offset, std::span<std::byte> out) const {
    const std::uint64_t size = source_->size();
    if (offset > size || out.size() > size - offset) {
        throw Error(ErrorKind::Corrupt, "read past end of disk (offset " + std::to_string(offset) +
                                            ", length " + std::to_string(out.size()) + ", disk size " +
                                            std::to_string(size) + ")");
    }
    if (out.empty()) return;
    // Holes found at open read as zeros without asking the source: pread() of a hole
    // copies zero pages one by one, several times slower than memset. This is how
    // qemu-img reads sparse raw files too (block status first, then only the data).
    const std::uint64_t end = offset + out.size();
    const ByteSet& stored = layers_.front().allocated;
    std::uint64_t pos = offset;
    const auto [first, last] = stored.equal_range(ByteSet::interval_type::right_open(offset, end));
    for (auto it = first; it != last; ++it) {
        const std::uint64_t lo = std::max(it->lower(), offset);
        const std::uint64_t hi = std::min(it->upper(), end);
        if (lo > pos) std::memset(out.data() + (pos - offset), 0, static_cast<std::size_t>(lo - pos));
        read_fully(*source_, lo,
                   out.subspan(static_cast<std::size_t>(lo - offset), static_cast<std::size_t>(hi - lo)));
        pos = hi;
    }
    if (pos < end) std::memset(out.data() + (pos - offset), 0, static_cast<std::size_t>(end - pos));
}

}  // namespace guestfrag
