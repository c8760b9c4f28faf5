// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

#include <QObject>

#include "core/error.hpp"
#include "core/progress.hpp"

namespace guestfrag::gui {

/// Runs one piece of core work at a time on its own thread, so the window never waits for
/// it. The work gets a Progress whose stop token cancel() fires; its result (plain data,
/// moved) or its Error comes back on the thread that owns this object, through the event
/// loop. Progress is not pushed to the GUI: done()/total() are atomics a timer reads, so a
/// core loop reporting millions of times costs nothing but two stores.
/// Destroying the job cancels the work and waits for it (core work checks its token often).
class BackgroundJob : public QObject {
    Q_OBJECT
public:
    explicit BackgroundJob(QObject* parent = nullptr) : QObject(parent) {}
    ~BackgroundJob() override { cancel_and_wait(); }

    /// Starts `work`, cancelling and waiting for a previous one first. Exactly one of
    /// `done(result)` / `failed(error)` runs later on this object's thread, unless the job is
    /// replaced or destroyed first. An exception other than Error reaches `failed` as
    /// Error(Internal).
    template <typename Result>
    void start(std::function<Result(const Progress&)> work, std::function<void(Result)> done,
               std::function<void(const Error&)> failed) {
        cancel_and_wait();
        const std::uint64_t generation = ++generation_;
        done_.store(0);
        total_.store(0);
        running_.store(true);
        thread_ = std::jthread([this, generation, work = std::move(work), done = std::move(done),
                                failed = std::move(failed)](std::stop_token stop) {
            Progress progress;
            progress.stop = stop;
            progress.report = [this](std::uint64_t d, std::uint64_t t) {
                done_.store(d, std::memory_order_relaxed);
                total_.store(t, std::memory_order_relaxed);
            };
            std::function<void()> deliver;
            try {
                deliver = [done, result = work(progress)]() mutable { done(std::move(result)); };
            } catch (const Error&) {
                // Rethrown on the receiving thread so that `failed` sees the error's own
                // type (MissingParentError carries the depth to ask a parent for).
                deliver = [failed, error = std::current_exception()] {
                    try {
                        std::rethrow_exception(error);
                    } catch (const Error& e) {
                        failed(e);
                    }
                };
            } catch (const std::exception& e) {
                deliver = [failed, e = Error(ErrorKind::Internal, e.what())] { failed(e); };
            }
            QMetaObject::invokeMethod(
                this,
                [this, generation, deliver = std::move(deliver)] {
                    // A result of a job that was replaced meanwhile is dropped.
                    if (generation != generation_) return;
                    running_.store(false);
                    deliver();
                    emit finished();
                },
                Qt::QueuedConnection);
        });
    }

    /// Asks the running work to stop; it then fails with Error(Cancelled).
    void cancel() { thread_.request_stop(); }
    [[nodiscard]] bool running() const { return running_.load(); }
    /// The work's last progress report (0, 0 before the first).
    [[nodiscard]] std::uint64_t done() const { return done_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t total() const { return total_.load(std::memory_order_relaxed); }

signals:
    /// After done/failed ran.
    void finished();

private:
    void cancel_and_wait() {
        if (thread_.joinable()) {
            thread_.request_stop();
            thread_.join();
        }
        ++generation_;
        running_.store(false);
    }

    std::jthread thread_;
    std::uint64_t generation_ = 0;  // only touched on this object's thread
    std::atomic<bool> running_{false};
    std::atomic<std::uint64_t> done_{0};
    std::atomic<std::uint64_t> total_{0};
};

}  // namespace guestfrag::gui
