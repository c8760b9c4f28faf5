// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/raw_layer.hpp"

namespace guestfrag {

Mapping RawLayer::map(std::uint64_t offset) const {
    const ByteSet& data = image_.layers().front().allocated;
    const auto it = data.upper_bound(ByteSet::interval_type::right_open(offset, offset + 1));
    // upper_bound on a unit interval finds the first interval past `offset`; the one before
    // it contains `offset` if any does.
    if (it != data.begin()) {
        const auto prev = std::prev(it);
        if (prev->lower() <= offset && offset < prev->upper())
            return {Allocation::Data, prev->upper() - offset, offset};
    }
    const std::uint64_t next = it == data.end() ? image_.size() : it->lower();
    return {Allocation::Unallocated, next - offset, std::nullopt};
}

}  // namespace guestfrag
