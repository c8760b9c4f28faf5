// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/batch/image_result.hpp"
#include "app/batch/sqlite.hpp"

namespace guestfrag::batch {

/// Schema version written to PRAGMA user_version; docs/batch.md documents the tables.
inline constexpr int kSchemaVersion = 2;

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

/// The batch results database (SQLite): runs, images, volumes, metrics, plans, warnings.
/// Every image is stored in its own transaction, so an interrupted batch loses nothing it
/// finished. Not thread-safe: one owner writes (the batch runner serialises its workers).
class ResultsDb {
public:
    /// Opens the database at `path`, creating it and its tables when `create`, and upgrades
    /// a schema-1 database in place (schema 2 adds the nullable host_* metrics). Throws
    /// Error(Unsupported) for a database of a newer schema, Error(Corrupt) for a file that
    /// is not an SQLite database, Error(NotFound/Io) otherwise.
    ResultsDb(const std::string& path, bool create);

    /// Starts a run; returns its id. `arguments` is the command line, `shard` "K/N" or "".
    std::int64_t begin_run(const std::string& arguments, const std::string& shard);
    /// Marks a run finished ("finished") or interrupted ("interrupted").
    void end_run(std::int64_t run, bool interrupted);

    /// Whether an earlier run analysed the image at `path` successfully with this exact
    /// fingerprint (then the batch skips it).
    [[nodiscard]] bool has_unchanged(const std::string& path, const Fingerprint& fingerprint);
    /// Stores one image's result (ok or failed) in one transaction.
    void store(std::int64_t run, const ImageResult& result);

    /// Every stored result for `path` (and `partition` when given), oldest first; failed
    /// runs appear with their error and partition 0.
    [[nodiscard]] std::vector<HistoryRow> history(const std::string& path, std::optional<int> partition);

    /// Appends every run of the database at `other` (same schema) to this one, renumbering
    /// its rows; one transaction. Merging shards of one batch gives the unsharded result.
    void merge_from(const std::string& other);

private:
    void create_schema();
    void upgrade_from_1();
    Database db_;
};

}  // namespace guestfrag::batch
