// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_flat_extent.hpp"

#include <bit>
#include <cstring>

#include "core/error.hpp"

namespace guestfrag {

VmdkFlatExtent::VmdkFlatExtent(HostFile file, std::uint64_t file_start, std::uint64_t size, bool holes_are_zero)
    : file_(std::move(file)), file_start_(file_start), size_(size), holes_are_zero_(holes_are_zero) {
    if (file_start_ > file_.size() || size_ > file_.size() - file_start_)
        throw Error(ErrorKind::Corrupt, "flat extent needs " + std::to_string(size_) + " bytes from offset " +
                                            std::to_string(file_start_) + " but the file has " +
                                            std::to_string(file_.size()) + " bytes");
    if (const auto unit = file_.source().allocation_unit()) {
        // The host block is the unit the host allocates in (as for raw images); a size that
        // is not a power of two cannot align runs, so sectors are used then.
        if (*unit >= 512 && std::has_single_bit(*unit)) granule_ = *unit;
        const ByteSet host = file_.source().stored_ranges(granule_);
        const auto window = ByteSet::interval_type::right_open(file_start_, file_start_ + size_);
        for (const auto& iv : host & window)
            stored_ += ByteSet::interval_type::right_open(iv.lower() - file_start_, iv.upper() - file_start_);
    } else {
        // A block device (or memory without a map) shows no holes: every sector is stored.
        stored_ += ByteSet::interval_type::right_open(0, size_);
    }
}

Mapping VmdkFlatExtent::map(std::uint64_t offset) const {
    const auto it = stored_.upper_bound(ByteSet::interval_type::right_open(offset, offset + 1));
    if (it != stored_.begin()) {
        const auto prev = std::prev(it);
        if (prev->lower() <= offset && offset < prev->upper())
            return {Allocation::Data, prev->upper() - offset, file_start_ + offset};
    }
    const std::uint64_t next = it == stored_.end() ? size_ : it->lower();
    return {holes_are_zero_ ? Allocation::Zero : Allocation::Unallocated, next - offset, std::nullopt};
}

void VmdkFlatExtent::read(std::uint64_t offset, std::span<std::byte> out) const {
    file_.read_exact(file_start_ + offset, out, "flat extent data");
}

void VmdkZeroExtent::read(std::uint64_t, std::span<std::byte> out) const { std::memset(out.data(), 0, out.size()); }

}  // namespace guestfrag
