// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "core/image/layer_file.hpp"
#include "core/image/raw_image.hpp"

namespace guestfrag {

/// A raw file as a layer of a chain (typically a flat base image under qcow2 or VMDK
/// deltas). Host holes are Unallocated: thin on the host, zero when read.
class RawLayer final : public LayerFile {
public:
    /// Reads `source` (non-null) as a raw disk; throws like RawImage(source).
    explicit RawLayer(std::shared_ptr<const ByteSource> source)
        : held_(source ? source->held_bytes() : 0), image_(std::move(source)) {}

    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Raw; }
    [[nodiscard]] const std::string& path() const override { return image_.path(); }
    [[nodiscard]] std::uint64_t virtual_size() const override { return image_.size(); }
    [[nodiscard]] std::uint64_t granule_size() const override { return image_.layers().front().granule_size; }
    [[nodiscard]] Mapping map(std::uint64_t offset) const override;
    void read(std::uint64_t offset, std::span<std::byte> out) const override { image_.read(offset, out); }
    [[nodiscard]] std::optional<ParentLink> parent() const override { return std::nullopt; }
    [[nodiscard]] std::uint64_t held_bytes() const override { return held_; }
    [[nodiscard]] std::vector<PhysicalFile> physical_files() const override { return image_.physical_files(0); }
    [[nodiscard]] LayerProvisioning provisioning(bool) const override {
        return image_.layers().front().provisioning;
    }

private:
    std::uint64_t held_;
    RawImage image_;
};

}  // namespace guestfrag
