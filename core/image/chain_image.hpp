// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/image/layer_file.hpp"

namespace guestfrag {

/// A virtual disk made of a chain of layers: layers[0] is the image that was named,
/// layers[i + 1] the parent of layers[i]. Reads resolve each range in the topmost layer
/// that allocates it; ranges no layer allocates read as zero.
class ChainImage final : public DiskImage {
public:
    /// Takes ownership of the chain (non-empty, all layers of one virtual size: checked
    /// by the caller that resolved it). Maps every layer once (cost: one map() call per
    /// allocation run of each layer).
    explicit ChainImage(std::vector<std::unique_ptr<LayerFile>> chain);

    [[nodiscard]] std::uint64_t size() const override { return size_; }
    void read(std::uint64_t offset, std::span<std::byte> out) const override;
    [[nodiscard]] ImageFormat format() const override { return chain_.front()->format(); }
    [[nodiscard]] const std::string& path() const override { return chain_.front()->path(); }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return layers_; }
    [[nodiscard]] std::vector<PhysicalFile> physical_files(std::size_t layer) const override {
        return layer < chain_.size() ? chain_[layer]->physical_files() : std::vector<PhysicalFile>{};
    }

private:
    void read_from(std::size_t depth, std::uint64_t offset, std::span<std::byte> out) const;

    std::vector<std::unique_ptr<LayerFile>> chain_;
    std::uint64_t size_ = 0;
    std::vector<Layer> layers_;
};

}  // namespace guestfrag
