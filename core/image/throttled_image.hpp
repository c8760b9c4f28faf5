// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <atomic>
#include <memory>
#include <stop_token>

#include "core/image/disk_image.hpp"
#include "core/io/rate_limiter.hpp"

namespace guestfrag {

/// A DiskImage whose every read first takes its bytes from a RateLimiter (shared with other
/// images, so a whole batch stays under one rate) and is counted. Owns the inner image; the
/// limiter must outlive it. A stop request ends a wait for the limiter early (the caller's
/// Progress then cancels the work). Thread-safe as the inner image is.
class ThrottledImage final : public DiskImage {
public:
    ThrottledImage(std::unique_ptr<DiskImage> inner, RateLimiter& limiter, std::stop_token stop = {})
        : inner_(std::move(inner)), limiter_(limiter), stop_(std::move(stop)) {}

    [[nodiscard]] std::uint64_t size() const override { return inner_->size(); }
    void read(std::uint64_t offset, std::span<std::byte> out) const override {
        limiter_.acquire(out.size(), stop_);
        inner_->read(offset, out);
        bytes_read_ += out.size();
    }
    [[nodiscard]] ImageFormat format() const override { return inner_->format(); }
    [[nodiscard]] const std::string& path() const override { return inner_->path(); }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return inner_->layers(); }
    [[nodiscard]] std::vector<PhysicalFile> physical_files(std::size_t layer) const override {
        return inner_->physical_files(layer);
    }

    /// Bytes read through this image so far.
    [[nodiscard]] std::uint64_t bytes_read() const { return bytes_read_.load(); }

private:
    std::unique_ptr<DiskImage> inner_;
    RateLimiter& limiter_;
    std::stop_token stop_;
    mutable std::atomic<std::uint64_t> bytes_read_{0};
};

}  // namespace guestfrag
