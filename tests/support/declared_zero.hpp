// SPDX-License-Identifier: GPL-2.0-or-later
// What each layer of an image declares zero, as its own file's map says. A DiskImage keeps a
// layer's zero runs only over data a deeper layer stores (Layer::zero); the format tests
// compare what the readers declare with qemu-img map, and check what the image kept.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/image/layer_file.hpp"

namespace guestfrag::test {

/// Per layer of `image` (by depth), the Zero runs of its file's map, the file opened again
/// by its path and format. Checks that the image kept exactly those over bytes a deeper layer stores.
inline std::vector<ByteSet> declared_zero(const DiskImage& image) {
    const std::vector<Layer>& layers = image.layers();
    std::vector<ByteSet> declared(layers.size());
    ByteSet below;
    for (std::size_t d = layers.size(); d-- > 0;) {
        const auto file = open_layer(layers[d].path, layers[d].format);
        const std::uint64_t size = file->virtual_size();
        for (std::uint64_t at = 0; at < size;) {
            const Mapping m = file->map(at);
            REQUIRE(m.length > 0);
            const std::uint64_t end = at + std::min(m.length, size - at);
            if (m.state == Allocation::Zero) declared[d] += ByteSet::interval_type::right_open(at, end);
            at = end;
        }
        INFO("depth " << d << ": " << layers[d].path);
        CHECK(layers[d].zero == (declared[d] & below));
        below += layers[d].allocated;
    }
    return declared;
}

}  // namespace guestfrag::test
