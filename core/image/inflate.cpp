// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/inflate.hpp"

#define ZLIB_CONST
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace guestfrag {
namespace {

/// Owns an initialised inflate stream.
class Inflater {
public:
    explicit Inflater(DeflateWrapper wrapper) {
        // Negative window bits select raw deflate. qemu compresses with a 4 KiB window
        // (-12); the largest window (-15) inflates those streams too, and any other valid one.
        ok_ = (wrapper == DeflateWrapper::Raw ? inflateInit2(&stream_, -15) : inflateInit(&stream_)) == Z_OK;
    }
    ~Inflater() {
        if (ok_) inflateEnd(&stream_);
    }
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;

    [[nodiscard]] bool ok() const { return ok_; }
    z_stream& stream() { return stream_; }

private:
    z_stream stream_{};
    bool ok_ = false;
};

}  // namespace

std::optional<InflateOutcome> inflate_buffer(std::span<const std::byte> in, std::span<std::byte> out,
                                             DeflateWrapper wrapper) {
    constexpr std::size_t max_chunk = std::numeric_limits<uInt>::max();
    if (in.size() > max_chunk || out.size() > max_chunk) return std::nullopt;
    Inflater inflater(wrapper);
    if (!inflater.ok()) return std::nullopt;
    z_stream& s = inflater.stream();
    s.next_in = reinterpret_cast<const Bytef*>(in.data());
    s.avail_in = static_cast<uInt>(in.size());
    s.next_out = reinterpret_cast<Bytef*>(out.data());
    s.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&s, Z_FINISH);
    return InflateOutcome{rc, out.size() - s.avail_out};
}

void run_inflate_jobs_in_parallel(std::size_t count, std::size_t max_threads,
                                  const std::function<void(std::size_t)>& job) {
    const std::size_t threads =
        std::min<std::size_t>({count, std::max(1u, std::thread::hardware_concurrency()), std::max<std::size_t>(1, max_threads)});
    if (threads <= 1) {
        for (std::size_t i = 0; i < count; ++i) job(i);
        return;
    }
    std::atomic<std::size_t> next{0};
    std::mutex failure_mutex;
    std::exception_ptr failure;
    const auto worker = [&] {
        for (std::size_t i; (i = next++) < count;) {
            try {
                job(i);
            } catch (...) {
                const std::lock_guard lock(failure_mutex);
                if (!failure) failure = std::current_exception();
                next = count;
            }
        }
    };
    {
        std::vector<std::jthread> pool;
        for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
        worker();
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace guestfrag
