// SPDX-License-Identifier: GPL-2.0-or-later
// An image's bytes read from an NBD server through libnbd (docs/nbd.md): the export is the
// guest disk itself (qemu-nbd, nbdkit-vddk) or a container file (nbdkit's file plugin),
// and the readers above cannot tell it from a host file.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/image/byte_source.hpp"
#include "core/image/unique_fd.hpp"

struct nbd_handle;

namespace guestfrag {

/// How long a server may keep us waiting, for the connection and for each request.
inline constexpr std::chrono::milliseconds kDefaultNbdTimeout{60'000};

/// One connection to one export, read-only. Reads are served through a read-ahead window
/// that grows while the reads are sequential (an MFT walk, a table scan) and keeps several
/// requests in flight, so a server far away costs round trips per window rather than per
/// chunk; random reads ask for exactly what they need. A thread of the source's own moves
/// the bytes while the reader works on what it has, as a kernel's read-ahead does. Safe to
/// read from several threads (they take turns on the connection).
class NbdSource final : public ByteSource {
public:
    /// Connects to `uri` (libnbd's URI forms, TLS parameters included; a key or certificate
    /// file named in the URI is read) and asks for the "base:allocation" context. Throws
    /// Error(Unsupported) for a URI libnbd cannot parse, Error(NotFound) when the server has
    /// no such export, Error(Io) for a refused connection, failed TLS, or a server that
    /// does not finish the handshake within `timeout`; each message names `uri`.
    [[nodiscard]] static std::unique_ptr<NbdSource> open(
        const std::string& uri, std::chrono::milliseconds timeout = kDefaultNbdTimeout);
    ~NbdSource() override;

    [[nodiscard]] const std::string& name() const noexcept override { return uri_; }
    [[nodiscard]] std::uint64_t size() const noexcept override { return size_; }
    /// At most kMaxRead bytes a call. Throws read_error(offset, errno) for a request the
    /// server fails, Error(Io, "... did not answer within N s" / "... connection ...") when
    /// the server stalls or goes away; after that every read fails the same way.
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override;
    /// 4 KiB when the server reports block status (the host file systems' and qemu's usual
    /// granularity, so a raw disk reads as it does locally); nullopt when it does not.
    [[nodiscard]] std::optional<std::uint64_t> allocation_unit() const override;
    /// The export's "base:allocation" block status: what is not a hole. Everything when the
    /// server reports none.
    [[nodiscard]] ByteSet stored_ranges(std::uint64_t granule) const override;

    static constexpr std::size_t kMaxRead = std::size_t{16} << 20;

private:
    struct HandleCloser {
        void operator()(nbd_handle* h) const noexcept;
    };
    /// One read request: [offset, offset + data.size()). `done` and `error` are set by the
    /// connection's thread.
    struct Request {
        std::uint64_t offset = 0;
        std::vector<std::byte> data;
        std::atomic<bool> done{false};
        std::atomic<int> error{0};  ///< errno of a request the server failed
    };

    NbdSource(std::string uri, std::chrono::milliseconds timeout);
    /// Sends requests for [from, to) after the window's end (clipped to the export).
    void extend_window(std::uint64_t from, std::uint64_t to) const;
    /// Waits for `request` to complete (see wait_for).
    void finish(Request& request) const;
    /// Waits until `complete` says the command is done, for at most the timeout. Marks the
    /// source broken and throws on a timeout or a dead connection.
    template <typename Complete>
    void wait_for(Complete&& complete) const;
    /// The connection's thread: polls the socket and lets libnbd read and write while
    /// requests are in flight, until stop_.
    void drive();
    /// Wakes drive() from its poll: a new request may need the socket writable.
    void wake() const noexcept;
    [[noreturn]] void fail(const std::string& why) const;
    /// Drops the window's requests (waiting for those still in flight).
    void clear_window() const;

    std::string uri_;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<nbd_handle, HandleCloser> handle_;
    std::uint64_t size_ = 0;
    std::size_t piece_ = 0;  ///< bytes of one request: the server's maximum, at most 1 MiB
    bool block_status_ = false;

    UniqueFd wake_fd_;  ///< an eventfd that wakes drive()
    std::atomic<bool> stop_{false};
    std::thread driver_;
    mutable std::mutex signal_mutex_;
    mutable std::condition_variable signal_;  ///< a request completed, or the connection died
    std::string dead_;                        ///< why the connection died (guarded by signal_mutex_)

    mutable std::mutex mutex_;
    /// Contiguous requests in offset order: what the last reads needed and the read-ahead.
    mutable std::deque<Request> window_;
    mutable std::uint64_t last_end_ = ~std::uint64_t{0};  ///< where the last read ended
    mutable std::uint64_t run_ = 0;                       ///< bytes the reads took in a row
    mutable std::string broken_;                          ///< why the connection is unusable
};

}  // namespace guestfrag
