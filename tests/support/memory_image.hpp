// SPDX-License-Identifier: GPL-2.0-or-later
// A disk that exists only in memory: no host file any library could open by itself.
#pragma once

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"

namespace guestfrag::test {

class MemoryImage final : public DiskImage {
public:
    /// One layer of 512-byte granules holding every byte, unless `layers` says otherwise.
    explicit MemoryImage(std::vector<std::byte> bytes, std::vector<Layer> layers = {})
        : bytes_(std::move(bytes)), layers_(std::move(layers)) {
        if (layers_.empty()) {
            Layer all;
            all.path = path_;
            all.format = ImageFormat::Raw;
            all.granule_size = 512;
            all.allocated.add(ByteSet::interval_type::right_open(0, bytes_.size()));
            layers_.push_back(std::move(all));
        }
    }
    [[nodiscard]] std::uint64_t size() const override { return bytes_.size(); }
    void read(std::uint64_t offset, std::span<std::byte> out) const override {
        ++reads_;
        if (offset > bytes_.size() || out.size() > bytes_.size() - offset)
            throw Error(ErrorKind::Corrupt, "read past end of disk");
        std::memcpy(out.data(), bytes_.data() + offset, out.size());
    }
    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Raw; }
    [[nodiscard]] const std::string& path() const override { return path_; }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return layers_; }
    [[nodiscard]] unsigned reads() const { return reads_.load(); }

private:
    std::vector<std::byte> bytes_;
    std::string path_ = "(memory)";
    std::vector<Layer> layers_;
    mutable std::atomic<unsigned> reads_{0};
};

}  // namespace guestfrag::test
