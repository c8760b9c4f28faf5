// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/batch/image_result.hpp"
#include "app/batch/sql.hpp"

namespace guestfrag::batch {

/// Schema version (SQLite: PRAGMA user_version; PostgreSQL: table guestfrag_schema);
/// docs/batch.md documents the tables.
inline constexpr int kSchemaVersion = 10;

/// A running batch refreshes its run's heartbeat (ResultsDb::heartbeat) every
/// kHeartbeatSeconds; a run on another host whose heartbeat is kRunLeaseSeconds old is taken
/// for dead (its own host checks the process instead). Hosts' clocks must agree to well within
/// the lease.
inline constexpr int kHeartbeatSeconds = 60;
inline constexpr int kRunLeaseSeconds = 600;

/// One volume's fragmentation at one run, for `guestfrag history`.
struct HistoryRow {
    std::string analyzed_at;  ///< ISO-8601 UTC
    std::string status;       ///< "ok" or "failed"
    std::string error;
    int partition = 0;
    double fragmentation_percent = 0;
    std::uint64_t fragmented_files = 0;
    std::uint64_t excess_fragments = 0;
    double free_space_fragmentation_percent = 0;
    std::uint64_t free_extents = 0;
    std::uint64_t free_bytes = 0;
    /// The image file's layout over the volume; absent in rows stored before schema 2.
    std::optional<std::uint64_t> host_seeks;
    std::optional<double> host_fragmentation_percent;
};

/// What a run may do with one image (ResultsDb::claim).
struct Claim {
    enum class Kind {
        Taken,      ///< this run analyses it
        Unchanged,  ///< an earlier run analysed it, unchanged since: skip
        Busy,       ///< another running batch has claimed it: skip
    } kind = Kind::Taken;
    std::int64_t holder = 0;  ///< the run that holds it, for Busy
};

/// The batch results database (an SQLite file or a PostgreSQL database): runs, images,
/// volumes, metrics, plans, warnings. Every image is stored in its own transaction, so an
/// interrupted batch loses nothing it finished. Not thread-safe: one owner writes (the batch
/// runner serialises its workers).
class ResultsDb {
public:
    /// Opens the database `target` (a file path or a postgresql:// URI, open_database),
    /// creating the file when `create` and the tables when `create` and there are none, and upgrades
    /// an older schema in place (schema 2 adds the nullable host_* metrics, schema 3 the
    /// runs' owner process and the claims table, schema 4 the applies and apply_skips
    /// tables, schema 5 the images' copy_commands_*, schema 6 the compactions table, schema 7 the
    /// plans' own IO, schema 8 the images' datastore and copy_relaid_commands_*), one step
    /// per version, all in one transaction. Throws
    /// Error(Unsupported) for a database of a newer schema, Error(Corrupt) for a file that
    /// is not an SQLite database, Error(NotFound/Io) otherwise. Concurrent openers of one
    /// PostgreSQL database create or upgrade it once.
    ResultsDb(const std::string& target, bool create);

    /// Starts a run owned by this process; returns its id. `arguments` is the command line,
    /// `shard` "K/N" or "".
    std::int64_t begin_run(const std::string& arguments, const std::string& shard);
    /// Marks a run finished ("finished") or interrupted ("interrupted") and drops its claims.
    void end_run(std::int64_t run, bool interrupted);
    /// Marks interrupted every run still `running` whose process is certainly gone (killed,
    /// crashed, or from an earlier boot) or, on another host, whose heartbeat is older than
    /// kRunLeaseSeconds, releasing its claims; returns their ids.
    std::vector<std::int64_t> end_dead_runs();
    /// Records that `run` is still working (now, this host's clock).
    void heartbeat(std::int64_t run);

    /// Decides, atomically against concurrent batches on this database, whether `run` analyses
    /// the image at `path`: not when another running batch has claimed it, nor (unless
    /// `force`) when an earlier run analysed it with this `fingerprint`. A taken image stays
    /// claimed by `run` until the run ends, so a concurrent batch does not redo it even after it
    /// is stored (and a failed image is not retried twice at once).
    [[nodiscard]] Claim claim(std::int64_t run, const std::string& path,
                              const std::optional<Fingerprint>& fingerprint, bool force);

    /// Whether an earlier run analysed the image at `path` successfully with this exact
    /// fingerprint (then the batch skips it).
    [[nodiscard]] bool has_unchanged(const std::string& path, const Fingerprint& fingerprint);
    /// Stores one image's result (ok or failed, with its apply or compaction when there was
    /// one) in one transaction.
    void store(std::int64_t run, const ImageResult& result);

    /// Every stored result for `path` (and `partition` when given), oldest first; failed
    /// runs appear with their error and partition 0.
    [[nodiscard]] std::vector<HistoryRow> history(const std::string& path, std::optional<int> partition);

    /// Appends every run of the database `other` (upgraded to this schema first) to this one;
    /// its rows get this database's next ids, in their original order; one transaction.
    /// Merging shards of one batch gives the unsharded result.
    void merge_from(const std::string& other);

    [[nodiscard]] Connection& connection() { return *db_; }

private:
    void create_schema();
    void upgrade_from(std::int64_t version);
    void store_apply(std::int64_t image_id, const ApplyRecord& apply);
    void store_compact(std::int64_t image_id, const CompactRecord& compact);
    std::unique_ptr<Connection> db_;
};

}  // namespace guestfrag::batch
