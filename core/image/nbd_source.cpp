// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/nbd_source.hpp"

#include <libnbd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace guestfrag {
namespace {

using Clock = std::chrono::steady_clock;

/// Bytes read in a row before read-ahead starts, and the most it grows to: 8 MiB keeps
/// eight 1 MiB requests in flight, enough to fill a link with a few ms of latency.
constexpr std::uint64_t kTrigger = 256 * 1024;
constexpr std::uint64_t kMaxAhead = 8 * 1024 * 1024;
constexpr std::size_t kMaxPiece = 1024 * 1024;

/// libnbd's last error on this thread, without its "nbd_xxx: " prefix.
std::string last_error() {
    const char* text = nbd_get_error();
    std::string message = text != nullptr ? text : "unknown error";
    if (message.starts_with("nbd_")) {
        const std::size_t colon = message.find(": ");
        if (colon != std::string::npos) message.erase(0, colon + 2);
    }
    return message;
}

int last_errno() {
    const int error = nbd_get_errno();
    return error != 0 ? error : EIO;
}

int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<std::int64_t>(left, 0, 3'600'000));
}

std::string seconds_text(std::chrono::milliseconds timeout) {
    const auto ms = timeout.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

/// What one block status command reports, shared with libnbd's callbacks for as long as
/// libnbd holds them (a command abandoned on a timeout still has its callbacks registered).
struct Extents {
    std::atomic<bool> done{false};
    std::atomic<int> error{0};
    std::uint64_t to = 0;       ///< the end of the range asked for
    std::uint64_t reached = 0;  ///< where the reported extents end
    std::uint64_t granule = 0;
    std::uint64_t size = 0;
    ByteSet data;
};

int on_extents(void* user, const char* context, std::uint64_t offset, std::uint32_t* entries,
               std::size_t count, int*) {
    auto& e = **static_cast<std::shared_ptr<Extents>*>(user);
    if (std::strcmp(context, LIBNBD_CONTEXT_BASE_ALLOCATION) != 0) return 0;
    std::uint64_t at = offset;
    for (std::size_t i = 0; i + 1 < count && at < e.to; i += 2) {
        const std::uint64_t end = std::min<std::uint64_t>(at + entries[i], e.to);
        if ((entries[i + 1] & LIBNBD_STATE_HOLE) == 0 && end > at) {
            const std::uint64_t lo = at - at % e.granule;
            const std::uint64_t hi = std::min(e.size, end + (e.granule - end % e.granule) % e.granule);
            e.data += ByteSet::interval_type::right_open(lo, hi);
        }
        at = end;
    }
    e.reached = std::max(e.reached, at);
    return 0;
}

int on_extents_done(void* user, int* error) {
    auto& e = **static_cast<std::shared_ptr<Extents>*>(user);
    if (*error != 0) e.error = *error;
    e.done = true;
    return 1;  // retires the command
}

void free_extents(void* user) { delete static_cast<std::shared_ptr<Extents>*>(user); }

/// Runs on the connection's thread, inside libnbd.
template <typename Request>
int on_read_done(void* user, int* error) {
    auto* request = static_cast<Request*>(user);
    if (*error != 0) request->error = *error;
    request->done = true;
    return 1;  // retires the command
}

}  // namespace

void NbdSource::HandleCloser::operator()(nbd_handle* h) const noexcept { nbd_close(h); }

NbdSource::NbdSource(std::string uri, std::chrono::milliseconds timeout)
    : uri_(std::move(uri)), timeout_(timeout) {}

NbdSource::~NbdSource() {
    if (driver_.joinable()) {
        stop_ = true;
        wake();
        driver_.join();
    }
    // Close before the buffers go: requests abandoned on a failure still point into them.
    handle_.reset();
}

void NbdSource::wake() const noexcept {
    const std::uint64_t one = 1;
    // A full counter already wakes the thread: a failed write loses nothing.
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

void NbdSource::drive() {
    nbd_handle* h = handle_.get();
    const int fd = nbd_aio_get_fd(h);
    std::string why;
    while (!stop_ && why.empty()) {
        const unsigned direction = nbd_aio_get_direction(h);
        pollfd fds[2] = {{fd, 0, 0}, {wake_fd_.get(), POLLIN, 0}};
        if ((direction & LIBNBD_AIO_DIRECTION_READ) != 0) fds[0].events |= POLLIN;
        if ((direction & LIBNBD_AIO_DIRECTION_WRITE) != 0) fds[0].events |= POLLOUT;
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            why = errno_text(errno);
            break;
        }
        if ((fds[1].revents & POLLIN) != 0) {
            std::uint64_t count = 0;
            [[maybe_unused]] const ssize_t n = ::read(wake_fd_.get(), &count, sizeof count);
        }
        int notified = 0;
        if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
            notified = nbd_aio_notify_read(h);
        else if ((fds[0].revents & POLLOUT) != 0)
            notified = nbd_aio_notify_write(h);
        if (notified == -1)
            why = last_error();
        else if (nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1)
            why = "the server closed the connection";
        {
            const std::scoped_lock lock(signal_mutex_);
            if (!why.empty()) dead_ = why;
        }
        signal_.notify_all();
    }
}

std::unique_ptr<NbdSource> NbdSource::open(const std::string& uri, std::chrono::milliseconds timeout) {
    std::unique_ptr<NbdSource> source(new NbdSource(uri, timeout));
    nbd_handle* h = nbd_create();
    if (h == nullptr) throw Error(ErrorKind::Io, "cannot connect to " + uri + ": " + last_error());
    source->handle_.reset(h);
    const auto refuse = [&](const std::string& what) {
        throw Error(ErrorKind::Io, "cannot connect to " + uri + ": " + what);
    };
    // The user wrote the URI: a TLS key or certificate file it names may be read.
    if (nbd_set_uri_allow_local_file(h, true) == -1 ||
        nbd_add_meta_context(h, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1)
        refuse(last_error());
    if (nbd_aio_connect_uri(h, uri.c_str()) == -1) {
        const int error = last_errno();
        const std::string why = last_error();
        if (error == EINVAL || error == ENOTSUP || error == EPROTONOSUPPORT)
            throw Error(ErrorKind::Unsupported, "not a usable NBD URI: " + uri + ": " + why);
        refuse(why);
    }
    const Clock::time_point deadline = Clock::now() + timeout;
    while (nbd_aio_is_ready(h) == 0) {
        if (nbd_aio_is_dead(h) == 1 || nbd_aio_is_closed(h) == 1) refuse(last_error());
        const int polled = nbd_poll(h, remaining_ms(deadline));
        if (polled == -1) {
            // The server ended negotiation with an error: ENOENT when it has no such export.
            const int error = last_errno();
            const std::string why = last_error();
            if (error == ENOENT) throw Error(ErrorKind::NotFound, "no such NBD export: " + uri + ": " + why);
            refuse(why);
        }
        if (polled == 0 && Clock::now() >= deadline)
            refuse("the server did not finish the handshake within " + seconds_text(timeout));
    }
    const std::int64_t size = nbd_get_size(h);
    if (size < 0) refuse(last_error());
    source->size_ = static_cast<std::uint64_t>(size);
    source->block_status_ = nbd_can_meta_context(h, LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
    const std::int64_t most = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
    source->piece_ = most > 0 ? std::min<std::size_t>(kMaxPiece, static_cast<std::size_t>(most)) : kMaxPiece;
    source->wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!source->wake_fd_) refuse("eventfd: " + errno_text(errno));
    source->driver_ = std::thread([s = source.get()] { s->drive(); });
    return source;
}

void NbdSource::fail(const std::string& why) const {
    broken_ = uri_ + ": " + why;
    throw Error(ErrorKind::Io, broken_);
}

template <typename Complete>
void NbdSource::wait_for(Complete&& complete) const {
    std::unique_lock lock(signal_mutex_);
    const bool done = signal_.wait_for(lock, timeout_, [&] { return complete() || !dead_.empty(); });
    if (done && complete()) return;
    const std::string dead = dead_;
    lock.unlock();
    if (!done) fail("the server did not answer within " + seconds_text(timeout_));
    fail("connection lost: " + dead);
}

void NbdSource::finish(Request& request) const {
    wait_for([&] { return request.done.load(); });
}

void NbdSource::clear_window() const {
    for (Request& request : window_) finish(request);
    window_.clear();
}

void NbdSource::extend_window(std::uint64_t from, std::uint64_t to) const {
    to = std::min(to, size_);
    ReadCounters& counters = read_counters();
    while (from < to) {
        Request& request = window_.emplace_back();
        request.offset = from;
        request.data.resize(static_cast<std::size_t>(std::min<std::uint64_t>(to - from, piece_)));
        const nbd_completion_callback done{on_read_done<Request>, &request, nullptr};
        if (nbd_aio_pread(handle_.get(), request.data.data(), request.data.size(), from, done, 0) == -1) {
            window_.pop_back();
            fail("cannot send a read: " + last_error());
        }
        wake();
        counters.nbd_requests.fetch_add(1, std::memory_order_relaxed);
        counters.nbd_bytes.fetch_add(request.data.size(), std::memory_order_relaxed);
        from += request.data.size();
    }
}

std::size_t NbdSource::read_at(std::uint64_t offset, std::span<std::byte> out) const {
    const std::scoped_lock lock(mutex_);
    if (!broken_.empty()) throw Error(ErrorKind::Io, broken_);
    if (offset >= size_ || out.empty()) return 0;
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>({out.size(), size_ - offset, kMaxRead}));
    const std::uint64_t end = offset + n;

    // Requests wholly before this read are done with, whatever comes next.
    while (!window_.empty() && window_.front().offset + window_.front().data.size() <= offset) {
        finish(window_.front());
        window_.pop_front();
    }
    const std::uint64_t window_end =
        window_.empty() ? offset : window_.back().offset + window_.back().data.size();
    const bool in_window = !window_.empty() && window_.front().offset <= offset && offset < window_end;
    if (!in_window) clear_window();
    // Read-ahead as long as what the reads have taken in a row, once that is worth it: a
    // stream that stops wastes at most what it read, and short runs (a partition table's
    // sectors) none. A read again of what the window holds is served from it.
    if (offset == last_end_)
        run_ += n;
    else if (!in_window)
        run_ = n;
    const std::uint64_t ahead = run_ >= kTrigger ? std::min(run_, kMaxAhead) : 0;
    extend_window(window_.empty() ? offset : window_end, end + ahead);

    std::uint64_t pos = offset;
    for (Request& request : window_) {
        if (pos >= end) break;
        finish(request);
        if (request.error != 0) {
            const std::uint64_t at = std::max(pos, request.offset);
            clear_window();
            throw read_error(at, request.error);
        }
        const std::uint64_t from = pos - request.offset;
        const std::size_t count = static_cast<std::size_t>(
            std::min<std::uint64_t>(end, request.offset + request.data.size()) - pos);
        std::memcpy(out.data() + (pos - offset), request.data.data() + from, count);
        pos += count;
    }
    last_end_ = end;
    return n;
}

std::optional<std::uint64_t> NbdSource::allocation_unit() const {
    if (!block_status_) return std::nullopt;
    return 4096;
}

ByteSet NbdSource::stored_ranges(std::uint64_t granule) const {
    if (!block_status_) return ByteSource::stored_ranges(granule);
    if (granule == 0) granule = 512;
    const std::scoped_lock lock(mutex_);
    if (!broken_.empty()) throw Error(ErrorKind::Io, broken_);
    // A block status request covers at most 4 GiB - 1; ask in 1 GiB steps, as far as each
    // answer reaches.
    constexpr std::uint64_t kStep = std::uint64_t{1} << 30;
    auto extents = std::make_shared<Extents>();
    extents->granule = granule;
    extents->size = size_;
    std::uint64_t at = 0;
    while (at < size_) {
        extents->to = std::min(size_, at + kStep);
        extents->reached = at;
        extents->done = false;
        const nbd_extent_callback callback{on_extents, new std::shared_ptr<Extents>(extents), free_extents};
        const nbd_completion_callback done{on_extents_done, new std::shared_ptr<Extents>(extents),
                                           free_extents};
        if (nbd_aio_block_status(handle_.get(), extents->to - at, at, callback, done, 0) == -1)
            fail("cannot ask for block status: " + last_error());
        wake();
        wait_for([&] { return extents->done.load(); });
        if (extents->error != 0) fail("block status failed: " + errno_text(extents->error));
        if (extents->reached <= at)
            fail("the server's block status made no progress at offset " + std::to_string(at));
        at = extents->reached;
    }
    return std::move(extents->data);
}

}  // namespace guestfrag
