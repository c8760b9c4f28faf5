// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/image/disk_image.hpp"

namespace guestfrag {

/// Disk bytes [lo, hi).
struct DiskRange {
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
};

/// Reads a disk through one buffer, so that many small reads of neighbouring bytes cost one
/// system call. On a volume of a million small files, a read a file made most of the time
/// of the proofs' hashing and 874,368 reads in apply's copy of the moved files; in the
/// order a caller asks for them, the next files often lie close by. On a miss the window
/// reads from the bytes asked for on, over the ranges the caller says it will ask for next
/// while each starts within `gap` of what the window holds and the whole fits in `capacity`
/// bytes: it reads at most (capacity / smallest range) times the bytes it serves, and
/// little more where the ranges follow each other.
class ReadWindow {
public:
    ReadWindow(const DiskImage& image, std::uint64_t capacity, std::uint64_t gap)
        : image_(image), capacity_(capacity), gap_(gap), buffer_(capacity) {}

    /// Disk bytes [at, at + n), n ≤ capacity, valid until the next call. `next(j)` is the
    /// j-th range the caller will ask for after this one (std::nullopt after the last). A
    /// miss that the next ranges do not stretch is read into a second buffer, the window
    /// left as it was: the far runs of a fragmented file would otherwise push out the
    /// neighbours of its first, which the window had read for what follows. Refilled, they
    /// made the proofs read the input's 4.2 GB of streams twice on the 1M-file volume.
    template <class Next>
    std::span<const std::byte> read(std::uint64_t at, std::uint64_t n, Next&& next) {
        if (!holds(at, n)) {
            const std::uint64_t hi = stretch(at, n, next);
            if (hi == at + n) {
                if (spare_.size() < n) spare_.resize(capacity_);
                image_.read(at, std::span<std::byte>(spare_.data(), n));
                return {spare_.data(), n};
            }
            fill(at, n, hi);
        }
        return {buffer_.data() + (at - lo_), n};
    }

    /// The same bytes copied into `out`; a miss that the next ranges do not stretch reads
    /// straight into `out`, the window left as it was.
    template <class Next>
    void read_into(std::uint64_t at, std::span<std::byte> out, Next&& next) {
        if (!holds(at, out.size())) {
            const std::uint64_t hi = stretch(at, out.size(), next);
            if (hi == at + out.size()) {
                image_.read(at, out);
                return;
            }
            fill(at, out.size(), hi);
        }
        std::copy_n(buffer_.data() + (at - lo_), out.size(), out.data());
    }

private:
    [[nodiscard]] bool holds(std::uint64_t at, std::uint64_t n) const { return at >= lo_ && at + n <= hi_; }

    /// The end of a window that starts at `at`.
    template <class Next>
    std::uint64_t stretch(std::uint64_t at, std::uint64_t n, Next& next) const {
        std::uint64_t hi = at + n;
        for (std::size_t j = 0;; ++j) {
            const std::optional<DiskRange> r = next(j);
            if (!r || r->lo < at || r->lo > hi + gap_ || r->hi - at > capacity_ || r->hi > image_.size())
                break;
            hi = std::max(hi, r->hi);
        }
        return hi;
    }

    /// Reads disk bytes [at, hi) into the window; past [at, at + n) may lie what the image
    /// cannot read (a corrupt block in free space), and then the bytes asked for alone are.
    void fill(std::uint64_t at, std::uint64_t n, std::uint64_t hi);

    const DiskImage& image_;
    std::uint64_t capacity_;
    std::uint64_t gap_;
    std::vector<std::byte> buffer_;
    std::vector<std::byte> spare_;  ///< a miss the window does not take; sized at first use
    std::uint64_t lo_ = 0;  ///< the window holds disk bytes [lo_, hi_)
    std::uint64_t hi_ = 0;
};

}  // namespace guestfrag
