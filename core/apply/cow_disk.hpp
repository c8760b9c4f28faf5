// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/apply/qcow2_writer.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/writable_disk.hpp"

namespace guestfrag {

class RateLimiter;

/// A writable view of a read-only DiskImage whose writes land in a qcow2 overlay being
/// written: the first write into a 64 KiB cluster gives it a data cluster of the overlay,
/// filled from the image where the write does not cover it, and every later access to that
/// cluster goes to the overlay; the rest reads from the image. So the moves of `apply` run
/// on the input without copying the disk or writing the input, each byte they write is
/// written once, and the overlay holds the clusters they wrote (release_unchanged() then
/// keeps those that differ). Borrows `base`,
/// `overlay` and `limiter` (may be null), which must outlive it; each fill takes its bytes
/// from the limiter first. The disk's size is the image's. Not safe for concurrent writes.
class CopyOnWriteDisk final : public WritableDisk {
public:
    CopyOnWriteDisk(const DiskImage& base, Qcow2OverlayWriter& overlay, RateLimiter* limiter = nullptr);

    [[nodiscard]] const std::string& path() const noexcept override { return overlay_.file().path(); }

    /// Throws what the image and the overlay file throw, Error(Corrupt) past size().
    void read(std::uint64_t offset, std::span<std::byte> out) const override;

    /// Throws Error(Io) from the overlay file, what the image throws for a fill,
    /// Error(Corrupt) past size().
    void write(std::uint64_t offset, std::span<const std::byte> bytes) override;

    [[nodiscard]] std::uint64_t size() const noexcept { return base_.size(); }

    /// Releases every overlay cluster whose bytes equal the image's (a move that wrote what
    /// was there already, a $Bitmap bit set and cleared again), so that the overlay holds
    /// exactly the clusters in which the disk differs from the image. Returns how many it
    /// released. Throws what reads throw. Cost: reads each stored cluster and the image's
    /// once.
    std::uint64_t release_unchanged();

private:
    void check_range(std::uint64_t offset, std::uint64_t length) const;

    const DiskImage& base_;
    Qcow2OverlayWriter& overlay_;
    RateLimiter* limiter_;
};

}  // namespace guestfrag
