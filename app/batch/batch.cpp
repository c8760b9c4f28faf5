// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/batch.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "app/batch/fingerprint.hpp"
#include "core/error.hpp"
#include "core/image/nbd_uri.hpp"

namespace guestfrag::batch {

namespace {

/// The storage device an image lives on (its file system's st_dev; an NBD image's server):
/// the unit of --per-datastore. A path that cannot be stat'ed gets its own key (it will fail
/// fast).
std::uint64_t datastore_of(const std::string& path, std::uint64_t fallback) {
    // The top bit keeps servers apart from device numbers, which never reach it.
    if (is_nbd_uri(path)) return std::hash<std::string>{}(nbd_server(path)) | (std::uint64_t{1} << 63);
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_dev) : ~fallback;
}

/// Hands out images to workers: in order, but never more than `limit` at once from one
/// datastore.
class Dispatcher {
public:
    Dispatcher(const std::vector<std::string>& images, unsigned limit) : limit_(limit) {
        for (std::size_t i = 0; i < images.size(); ++i) pending_.push_back({images[i], datastore_of(images[i], i)});
    }

    struct Item {
        std::string path;
        std::uint64_t datastore = 0;
    };

    /// The next image a worker may take, waiting while every pending one is on a busy
    /// datastore; nullopt when none are left or `stop` is requested.
    std::optional<Item> take(const std::stop_token& stop) {
        std::unique_lock lock(mutex_);
        for (;;) {
            if (stop.stop_requested() || pending_.empty()) return std::nullopt;
            const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Item& item) {
                return limit_ == 0 || busy_[item.datastore] < limit_;
            });
            if (it != pending_.end()) {
                Item item = *it;
                pending_.erase(it);
                ++busy_[item.datastore];
                return item;
            }
            const std::uint64_t seen = releases_;
            changed_.wait(lock, stop, [&] { return releases_ != seen; });
        }
    }

    void release(const Item& item) {
        {
            const std::lock_guard lock(mutex_);
            --busy_[item.datastore];
            ++releases_;
        }
        changed_.notify_all();
    }

private:
    unsigned limit_;
    std::mutex mutex_;
    std::condition_variable_any changed_;
    std::deque<Item> pending_;
    std::map<std::uint64_t, unsigned> busy_;
    std::uint64_t releases_ = 0;
};

}  // namespace

BatchSummary run_batch(ResultsDb& db, std::int64_t run, const std::vector<std::string>& images,
                       const BatchOptions& options, std::stop_token stop,
                       const std::function<void(const BatchEvent&)>& on_event) {
    const auto start = std::chrono::steady_clock::now();
    BatchSummary summary;
    summary.total = images.size();
    RateLimiter limiter(options.read_rate);
    Dispatcher dispatcher(images, options.per_datastore);
    std::mutex store_mutex;  // guards db, summary and on_event
    std::exception_ptr failure;
    // Workers stop on the caller's request or when storing fails (then nothing more can be
    // recorded and the batch ends with that error).
    std::stop_source cancel;
    const std::stop_callback forward(stop, [&] { cancel.request_stop(); });
    const std::stop_token cancelled = cancel.get_token();

    const auto finished = [&](BatchEvent event) {
        event.finished = summary.analysed + summary.skipped + summary.busy;
        event.total = summary.total;
        if (on_event) on_event(event);
    };
    const auto work = [&](std::stop_token) {
        while (auto item = dispatcher.take(cancelled)) {
            try {
                std::optional<Fingerprint> fp;
                if (!options.force) {
                    try {
                        fp = fingerprint(item->path);
                    } catch (const Error&) {
                        // Unreadable: the job records why.
                    }
                }
                {
                    const std::lock_guard lock(store_mutex);
                    const Claim claim = db.claim(run, item->path, fp, options.force);
                    if (claim.kind != Claim::Kind::Taken) {
                        ++(claim.kind == Claim::Kind::Busy ? summary.busy : summary.skipped);
                        const auto kind =
                            claim.kind == Claim::Kind::Busy ? BatchEvent::Kind::Busy : BatchEvent::Kind::Skipped;
                        finished({kind, item->path, nullptr, claim.holder});
                        dispatcher.release(*item);
                        continue;
                    }
                }
                const ImageResult result = run_image_job(item->path, options.job, limiter, cancelled);
                const std::lock_guard lock(store_mutex);
                db.store(run, result);
                ++summary.analysed;
                if (!result.ok) ++summary.failed;
                summary.bytes_read += result.bytes_read;
                finished({BatchEvent::Kind::Done, item->path, &result});
            } catch (const Error& e) {
                if (e.kind() != ErrorKind::Cancelled) {
                    const std::lock_guard lock(store_mutex);
                    if (!failure) failure = std::current_exception();
                    cancel.request_stop();
                }
            } catch (...) {
                const std::lock_guard lock(store_mutex);
                if (!failure) failure = std::current_exception();
                cancel.request_stop();
            }
            dispatcher.release(*item);
        }
    };
    {
        // Keeps the run's lease while the workers go (ResultsDb::heartbeat): a batch on another
        // host takes this run for dead only once it has stopped.
        const std::jthread heartbeat([&](const std::stop_token& done) {
            std::mutex idle;
            std::condition_variable_any tick;
            std::unique_lock lock(idle);
            for (;;) {
                tick.wait_for(lock, done, std::chrono::seconds(kHeartbeatSeconds), [] { return false; });
                if (done.stop_requested()) return;
                const std::lock_guard store(store_mutex);
                try {
                    db.heartbeat(run);
                } catch (const Error&) {
                    // The database is gone: the next store says so and ends the batch.
                }
            }
        });
        std::vector<std::jthread> workers;
        const unsigned n = std::max(1u, std::min<unsigned>(options.jobs, static_cast<unsigned>(images.size())));
        for (unsigned i = 0; i < n; ++i) workers.emplace_back(work);
    }
    if (failure) std::rethrow_exception(failure);
    summary.interrupted = stop.stop_requested() && summary.analysed + summary.skipped + summary.busy < summary.total;
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return summary;
}

}  // namespace guestfrag::batch
