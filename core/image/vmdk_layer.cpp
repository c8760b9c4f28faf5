// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_layer.hpp"

#include <algorithm>
#include <cstdio>

namespace guestfrag {
namespace {

/// Following extents an unallocated or zero run may continue into, per map() call.
constexpr std::size_t kMergeExtents = 8;

}  // namespace

std::string vmdk_cid_text(std::uint32_t cid) {
    char text[9];
    std::snprintf(text, sizeof text, "%08x", cid);
    return text;
}

VmdkLayer::VmdkLayer(std::string path, std::optional<VmdkDescriptor> descriptor, std::vector<Placed> extents,
                     std::optional<ParentLink> parent)
    : path_(std::move(path)), descriptor_(std::move(descriptor)), extents_(std::move(extents)), parent_(std::move(parent)) {
    if (extents_.empty()) throw Error(ErrorKind::Internal, "vmdk layer without extents");
    size_ = extents_.back().start + extents_.back().extent->size();
    std::uint64_t granule = 0;
    for (const Placed& p : extents_)
        if (const std::uint64_t g = p.extent->granule(); g != 0) granule = granule == 0 ? g : std::min(granule, g);
    if (granule == 0) granule = kVmdkSectorSize;  // only ZERO extents
    // Runs of each extent fall on its granule counted from its start (from its file offset
    // for flat extents), so the layer's granule must divide those too.
    for (const Placed& p : extents_)
        while (granule > kVmdkSectorSize && (p.start % granule != 0 || p.extent->file_start() % granule != 0))
            granule /= 2;
    granule_ = granule;
}

std::size_t VmdkLayer::extent_at(std::uint64_t offset) const {
    const auto it = std::upper_bound(extents_.begin(), extents_.end(), offset,
                                     [](std::uint64_t value, const Placed& p) { return value < p.start; });
    return static_cast<std::size_t>(it - extents_.begin()) - 1;
}

void VmdkLayer::rethrow_in_extent(std::size_t index, const Error& error) const {
    // Single-file disks need no more context; with several extents, say which one.
    if (extents_.size() == 1 || error.kind() == ErrorKind::Internal) throw error;
    const Placed& p = extents_[index];
    throw Error(error.kind(), "extent " + std::to_string(index + 1) + " (" + (p.name.empty() ? p.extent->kind() : p.name) +
                                  "): " + error.what());
}

Mapping VmdkLayer::map(std::uint64_t offset) const {
    if (offset >= size_) throw Error(ErrorKind::Internal, "vmdk layer mapped past its end");
    std::size_t i = extent_at(offset);
    Mapping m;
    try {
        m = extents_[i].extent->map(offset - extents_[i].start);
    } catch (const Error& e) {
        rethrow_in_extent(i, e);
    }
    m.file_index = static_cast<std::uint32_t>(i);
    // A Data run with a file offset belongs to one file; other runs may continue.
    for (std::size_t j = i + 1; j < extents_.size() && j <= i + kMergeExtents; ++j) {
        if (offset + m.length != extents_[j].start || m.file_offset) break;
        Mapping next;
        try {
            next = extents_[j].extent->map(0);
        } catch (const Error& e) {
            rethrow_in_extent(j, e);
        }
        if (next.state != m.state || next.file_offset) break;
        m.length += next.length;
    }
    return m;
}

void VmdkLayer::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset > size_ || out.size() > size_ - offset)
        throw Error(ErrorKind::Corrupt, "read past end of disk (offset " + std::to_string(offset) + ", " +
                                            std::to_string(out.size()) + " bytes, disk is " + std::to_string(size_) +
                                            " bytes)");
    while (!out.empty()) {
        const std::size_t i = extent_at(offset);
        const Placed& p = extents_[i];
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), p.start + p.extent->size() - offset));
        try {
            p.extent->read(offset - p.start, out.first(n));
        } catch (const Error& e) {
            rethrow_in_extent(i, e);
        }
        offset += n;
        out = out.subspan(n);
    }
}

std::uint64_t VmdkLayer::held_bytes() const {
    std::uint64_t total = 0;
    for (const Placed& p : extents_) total += p.extent->held_bytes();
    return total;
}

std::vector<LayerFileSpan> VmdkLayer::file_spans() const {
    std::vector<LayerFileSpan> out;
    for (const Placed& p : extents_) {
        LayerFileSpan span{p.start, std::nullopt};
        if (p.extent->writes_in_place()) span.in_place_offset = p.extent->file_start();
        out.push_back(span);
    }
    return out;
}

std::vector<PhysicalFile> VmdkLayer::physical_files() const {
    std::vector<PhysicalFile> out;
    for (std::size_t i = 0; i < extents_.size(); ++i) {
        std::optional<PhysicalFile> file = extents_[i].extent->physical_file();
        if (!file) continue;
        file->file = static_cast<std::uint32_t>(i);
        out.push_back(std::move(*file));
    }
    return out;
}

std::optional<std::string> VmdkLayer::identity() const {
    if (!descriptor_ || !descriptor_->cid) return std::nullopt;
    return vmdk_cid_text(*descriptor_->cid);
}

LayerProvisioning VmdkLayer::provisioning(bool fully_allocated) const {
    const bool sparse = !descriptor_ || std::any_of(descriptor_->extents.begin(), descriptor_->extents.end(),
                                                    [](const VmdkExtentLine& e) {
                                                        return e.type == VmdkExtentType::Sparse ||
                                                               e.type == VmdkExtentType::VmfsSparse ||
                                                               e.type == VmdkExtentType::SeSparse;
                                                    });
    if (sparse) return {Provisioning::Thin, granule_, false, "sparse vmdk: a grain is allocated on its first write"};
    const auto& values = descriptor_->values;
    if (const auto thin = values.find("ddb.thinProvisioned"); thin != values.end() && thin->second == "1")
        return {Provisioning::Thin, kVmfsFileBlock, false,
                "ddb.thinProvisioned = 1: a thin disk on VMFS, allocated in 1 MiB file blocks"};
    const std::string& type = descriptor_->create_type;
    if (type.starts_with("vmfs"))
        return {Provisioning::Lazy, kVmfsFileBlock, true,
                "createType " + type +
                    " records thick provisioning but not whether VMFS zeroed its blocks at creation: lazy "
                    "assumed, vSphere's default thick type (zeroedthick)"};
    LayerProvisioning host = raw_provisioning(fully_allocated, granule_);
    host.basis = "createType " + type + ", flat extents: " + host.basis;
    return host;
}

}  // namespace guestfrag
