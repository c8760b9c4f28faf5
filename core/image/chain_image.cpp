// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/chain_image.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/image/host_layout.hpp"

namespace guestfrag {
namespace {

/// Separately placed runs of stored data any layer may report, whatever its file holds.
constexpr std::uint64_t kFreeHostExtents = std::uint64_t{1} << 17;
/// Beyond those, one per this many bytes the layer's files really hold. A run of a
/// sound file has bytes of its own there (at least a 512-byte sector, a few dozen after
/// host compression); a run costs about a hundred bytes here, so the runs' memory stays
/// a small multiple of the file's.
constexpr std::uint64_t kHeldBytesPerHostExtent = 64;

/// Throws Error(Corrupt) when `layer` already has more host extents than `file` can back.
/// Messages name the file of a parent layer; the top layer's is the image's own name.
void check_host_extents(const LayerFile& file, const Layer& layer) {
    const std::uint64_t held = file.held_bytes();
    const std::uint64_t limit = kFreeHostExtents + held / kHeldBytesPerHostExtent;
    if (layer.host_extents.size() <= limit) return;
    throw Error(ErrorKind::Corrupt,
                (layer.depth == 0 ? std::string() : file.path() + ": ") + "the layer maps to more than " +
                    std::to_string(limit) + " separately stored runs of data, more than the " +
                    std::to_string(held) + " bytes its files hold on the host can back (its tables share or invent data)");
}

/// The layer's map. `below` is what the layers under it store: a declared zero is kept only
/// over those bytes, for elsewhere it reads as the unallocated bytes it stands for do. A
/// table of alternating zero and unallocated entries (written out, but a few bytes each)
/// would otherwise cost a run per block here; kept this way, zero runs cost no more than
/// the lower layers' data runs, which their files back.
Layer map_layer(const LayerFile& file, int depth, const ByteSet& below) {
    Layer layer;
    layer.depth = depth;
    layer.path = file.path();
    layer.format = file.format();
    layer.granule_size = file.granule_size();
    layer.growth_unit = file.growth_unit();
    layer.warnings = file.warnings();
    layer.file_spans = file.file_spans();
    const std::uint64_t size = file.virtual_size();
    for (std::uint64_t offset = 0; offset < size;) {
        const Mapping m = file.map(offset);
        if (m.length == 0) throw Error(ErrorKind::Internal, "layer mapping made no progress");
        const std::uint64_t end = offset + std::min(m.length, size - offset);
        const auto range = ByteSet::interval_type::right_open(offset, end);
        if (m.state == Allocation::Data) {
            layer.allocated.add(layer.allocated.end(), range);
            if (m.file_offset) {
                append_host_extent(layer.host_extents, {offset, *m.file_offset, end - offset, m.file_index});
                check_host_extents(file, layer);
            }
        } else if (m.state == Allocation::Zero) {
            const auto [first, last] = below.equal_range(range);
            for (auto it = first; it != last; ++it)
                layer.zero.add(layer.zero.end(), ByteSet::interval_type::right_open(std::max(it->lower(), offset),
                                                                                    std::min(it->upper(), end)));
        }
        offset = end;
    }
    layer.provisioning = file.provisioning(boost::icl::length(layer.allocated) == size);
    return layer;
}

}  // namespace

ChainImage::ChainImage(std::vector<std::unique_ptr<LayerFile>> chain) : chain_(std::move(chain)) {
    if (chain_.empty()) throw Error(ErrorKind::Internal, "empty layer chain");
    size_ = chain_.front()->virtual_size();
    // Bottom up, so that each layer's zero runs can be cut to the data beneath it.
    layers_.resize(chain_.size());
    ByteSet below;
    for (std::size_t i = chain_.size(); i-- > 0;) {
        layers_[i] = map_layer(*chain_[i], static_cast<int>(i), below);
        chain_[i]->release_caches();
        if (i > 0) below += layers_[i].allocated;
    }
}

void ChainImage::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset > size_ || out.size() > size_ - offset)
        throw Error(ErrorKind::Corrupt, "read past end of disk (offset " + std::to_string(offset) + ", " +
                                            std::to_string(out.size()) + " bytes, disk is " +
                                            std::to_string(size_) + " bytes)");
    read_from(0, offset, out);
}

void ChainImage::read_from(std::size_t depth, std::uint64_t offset, std::span<std::byte> out) const {
    const LayerFile& layer = *chain_[depth];
    while (!out.empty()) {
        // A parent may be smaller than its child (qcow2 allows it): beyond its end, zeros.
        if (offset >= layer.virtual_size()) {
            std::memset(out.data(), 0, out.size());
            return;
        }
        const Mapping m = layer.map(offset);
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(m.length, out.size()));
        if (n == 0) throw Error(ErrorKind::Internal, "layer mapping made no progress");
        const auto part = out.first(n);
        switch (m.state) {
            case Allocation::Data: layer.read(offset, part); break;
            case Allocation::Zero: std::memset(part.data(), 0, n); break;
            case Allocation::Unallocated:
                if (depth + 1 < chain_.size()) read_from(depth + 1, offset, part);
                else std::memset(part.data(), 0, n);
                break;
        }
        offset += n;
        out = out.subspan(n);
    }
}

}  // namespace guestfrag
