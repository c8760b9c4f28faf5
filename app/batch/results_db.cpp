// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/results_db.hpp"

#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <ctime>

#include "core/error.hpp"
#include "core/io/process_owner.hpp"

namespace guestfrag::batch {

namespace {

// Keep in step with docs/batch.md.
constexpr const char* kSchema = R"sql(
CREATE TABLE runs (
  run_id    INTEGER PRIMARY KEY,
  started   TEXT NOT NULL,
  finished  TEXT,
  status    TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished', 'interrupted')),
  arguments TEXT NOT NULL,
  shard     TEXT NOT NULL DEFAULT '',
  host      TEXT,
  boot_id   TEXT,
  pid       INTEGER,
  pid_start INTEGER
);
CREATE TABLE claims (
  path       TEXT PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  claimed_at TEXT NOT NULL
);
CREATE TABLE images (
  image_id        INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(run_id),
  path            TEXT NOT NULL,
  size            INTEGER NOT NULL,
  mtime_ns        INTEGER NOT NULL,
  header_hash     TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
  error           TEXT,
  format          TEXT,
  virtual_size    INTEGER,
  layers          INTEGER,
  allocated_bytes INTEGER,
  bytes_read      INTEGER NOT NULL,
  seconds         REAL NOT NULL,
  analyzed_at     TEXT NOT NULL,
  copy_commands_4m  INTEGER,
  copy_commands_16m INTEGER
);
CREATE INDEX images_by_path ON images(path, status);
CREATE TABLE volumes (
  volume_id          INTEGER PRIMARY KEY,
  image_id           INTEGER NOT NULL REFERENCES images(image_id),
  partition          INTEGER NOT NULL,
  start              INTEGER NOT NULL,
  length             INTEGER NOT NULL,
  cluster_size       INTEGER NOT NULL,
  total_clusters     INTEGER NOT NULL,
  free_clusters      INTEGER NOT NULL,
  label              TEXT NOT NULL,
  serial             TEXT NOT NULL,
  mft_records_in_use INTEGER NOT NULL
);
CREATE INDEX volumes_by_image ON volumes(image_id);
CREATE TABLE metrics (
  volume_id                        INTEGER PRIMARY KEY REFERENCES volumes(volume_id),
  files                            INTEGER NOT NULL,
  fragmented_files                 INTEGER NOT NULL,
  fragments                        INTEGER NOT NULL,
  excess_fragments                 INTEGER NOT NULL,
  fragmented_bytes                 INTEGER NOT NULL,
  fragmentation_percent            REAL NOT NULL,
  mft_fragments                    INTEGER NOT NULL,
  free_extents                     INTEGER NOT NULL,
  largest_free_extent_clusters     INTEGER NOT NULL,
  free_space_fragmentation_percent REAL NOT NULL,
  reclaimable_bytes                INTEGER NOT NULL,
  host_extents                     INTEGER,
  host_seeks                       INTEGER,
  host_backward_seeks              INTEGER,
  host_fragmentation_percent       REAL
);
CREATE TABLE plans (
  volume_id                INTEGER PRIMARY KEY REFERENCES volumes(volume_id),
  strategy                 TEXT NOT NULL,
  moves                    INTEGER NOT NULL,
  moved_bytes              INTEGER NOT NULL,
  fragments_before         INTEGER NOT NULL,
  fragments_after          INTEGER NOT NULL,
  granule_size             INTEGER NOT NULL,
  thin_growth_bytes        INTEGER NOT NULL,
  clone_delta_growth_bytes INTEGER NOT NULL,
  reclaimable_bytes_before INTEGER NOT NULL,
  reclaimable_bytes_after  INTEGER NOT NULL,
  plan_json                TEXT NOT NULL,
  plan_ios                 INTEGER,
  plan_first_writes        INTEGER,
  plan_seconds_hdd         REAL,
  plan_seconds_ssd         REAL,
  plan_seconds_array       REAL
);
CREATE TABLE warnings (
  volume_id INTEGER NOT NULL REFERENCES volumes(volume_id),
  code      TEXT NOT NULL,
  severity  TEXT NOT NULL,
  bytes     INTEGER NOT NULL,
  message   TEXT NOT NULL
);
CREATE INDEX warnings_by_volume ON warnings(volume_id);
)sql";

// Schema 4: what `batch --apply-to` did per image. Keep in step with docs/batch.md.
constexpr const char* kApplyTables = R"sql(
CREATE TABLE applies (
  image_id            INTEGER PRIMARY KEY REFERENCES images(image_id),
  partition           INTEGER,
  output              TEXT NOT NULL,
  output_format       TEXT NOT NULL CHECK (output_format IN ('raw', 'qcow2')),
  status              TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
  error               TEXT,
  moves_planned       INTEGER,
  moves_done          INTEGER,
  moves_skipped       INTEGER,
  bytes_moved         INTEGER,
  disk_bytes_written  INTEGER,
  output_file_bytes   INTEGER,
  verified            INTEGER,
  streams_hashed      INTEGER,
  fragments_before    INTEGER,
  fragments_predicted INTEGER,
  fragments_after     INTEGER,
  seconds             REAL
);
CREATE TABLE apply_skips (
  image_id INTEGER NOT NULL REFERENCES applies(image_id),
  reason   TEXT NOT NULL,
  moves    INTEGER NOT NULL
);
CREATE INDEX apply_skips_by_image ON apply_skips(image_id);
)sql";

// Schema 6: what `batch --compact-to` did per image. Keep in step with docs/batch.md.
constexpr const char* kCompactTable = R"sql(
CREATE TABLE compactions (
  image_id            INTEGER PRIMARY KEY REFERENCES images(image_id),
  output              TEXT NOT NULL,
  output_format       TEXT NOT NULL CHECK (output_format IN ('raw', 'qcow2', 'vmdk', 'vhdx')),
  status              TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
  error               TEXT,
  granule_bytes       INTEGER,
  packed              INTEGER,
  volumes             INTEGER,
  moves_planned       INTEGER,
  moves_done          INTEGER,
  moves_skipped       INTEGER,
  bytes_moved         INTEGER,
  granules_input      INTEGER,
  granules_sparsified INTEGER,
  granules_packed     INTEGER,
  granules_output     INTEGER,
  host_bytes_input    INTEGER,
  host_bytes_output   INTEGER,
  data_bytes_output   INTEGER,
  output_file_bytes   INTEGER,
  verified            INTEGER,
  streams_hashed      INTEGER,
  seconds             REAL
);
)sql";

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

std::string hex(std::uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof text, "%016" PRIX64, value);
    return text;
}

std::int64_t scalar(Database& db, const std::string& sql) {
    Statement s(db, sql);
    return s.step() ? s.integer(0) : 0;
}

// Upgrade steps: step N turns a database of schema N - 1 into one of schema N. They run in
// order, inside one transaction, from the database's version on.

/// Schema 2 only adds columns; rows of schema 1 keep NULL there ("not measured").
void upgrade_to_2(Database& db) {
    for (const char* column : {"host_extents INTEGER", "host_seeks INTEGER", "host_backward_seeks INTEGER",
                               "host_fragmentation_percent REAL"})
        db.exec(std::string("ALTER TABLE metrics ADD COLUMN ") + column);
}

/// Schema 3: runs know their process (NULL for older runs: never taken for dead), and
/// claims keep concurrent runs off each other's images.
void upgrade_to_3(Database& db) {
    for (const char* column : {"host TEXT", "boot_id TEXT", "pid INTEGER", "pid_start INTEGER"})
        db.exec(std::string("ALTER TABLE runs ADD COLUMN ") + column);
    db.exec(
        "CREATE TABLE claims (path TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(run_id), "
        "claimed_at TEXT NOT NULL)");
}

/// Schema 4 adds the apply tables; older images simply have no apply rows.
void upgrade_to_4(Database& db) { db.exec(kApplyTables); }

/// Schema 5: the copy figures of each image (docs/copy.md); NULL in older rows ("not
/// measured").
void upgrade_to_5(Database& db) {
    for (const char* column : {"copy_commands_4m INTEGER", "copy_commands_16m INTEGER"})
        db.exec(std::string("ALTER TABLE images ADD COLUMN ") + column);
}

/// Schema 6 adds the compactions table; older images simply have no compaction rows.
void upgrade_to_6(Database& db) { db.exec(kCompactTable); }

/// Schema 7: the plan's own IO on the device models (docs/impact.md §10); NULL in older rows
/// ("not measured").
void upgrade_to_7(Database& db) {
    for (const char* column : {"plan_ios INTEGER", "plan_first_writes INTEGER", "plan_seconds_hdd REAL",
                               "plan_seconds_ssd REAL", "plan_seconds_array REAL"})
        db.exec(std::string("ALTER TABLE plans ADD COLUMN ") + column);
}

struct UpgradeStep {
    int to;
    void (*run)(Database&);
};
constexpr UpgradeStep kUpgrades[] = {
    {2, upgrade_to_2}, {3, upgrade_to_3}, {4, upgrade_to_4}, {5, upgrade_to_5}, {6, upgrade_to_6}, {7, upgrade_to_7}};
static_assert(std::size(kUpgrades) == kSchemaVersion - 1, "one upgrade step per schema version");

}  // namespace

ResultsDb::ResultsDb(const std::string& path, bool create) : db_(path, create) {
    const std::int64_t version = scalar(db_, "PRAGMA user_version");
    if (version > kSchemaVersion)
        throw Error(ErrorKind::Unsupported, "results database of a newer guestfrag (schema " +
                                                std::to_string(version) + ")");
    if (version == 0) {
        if (scalar(db_, "SELECT count(*) FROM sqlite_master") != 0)
            throw Error(ErrorKind::Unsupported, "not a guestfrag results database");
        if (!create) throw Error(ErrorKind::NotFound, "empty results database");
        create_schema();
    } else if (version < kSchemaVersion) {
        upgrade_from(version);
    }
    // WAL: `history` and other readers never block a running batch, and a crash mid-write
    // leaves the last committed image intact.
    db_.exec("PRAGMA journal_mode = WAL");
}

void ResultsDb::create_schema() {
    Transaction t(db_);
    db_.exec(kSchema);
    db_.exec(kApplyTables);
    db_.exec(kCompactTable);
    db_.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    t.commit();
}

void ResultsDb::upgrade_from(std::int64_t version) {
    // One step per schema, each taking the database from the version before it: a database
    // of any older schema runs the steps it is missing, in order, in one transaction.
    Transaction t(db_);
    for (const UpgradeStep& step : kUpgrades)
        if (version < step.to) step.run(db_);
    db_.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    t.commit();
}

std::vector<std::int64_t> ResultsDb::end_dead_runs() {
    std::vector<std::int64_t> dead;
    {
        Statement s(db_,
                    "SELECT run_id, host, boot_id, pid, pid_start FROM runs "
                    "WHERE status = 'running' AND pid IS NOT NULL");
        while (s.step()) {
            const ProcessOwner owner{s.text(1), s.text(2), s.integer(3), s.integer(4)};
            if (!may_be_alive(owner)) dead.push_back(s.integer(0));
        }
    }
    for (const std::int64_t run : dead) end_run(run, true);
    return dead;
}

std::int64_t ResultsDb::begin_run(const std::string& arguments, const std::string& shard) {
    const ProcessOwner self = this_process();
    Statement(db_,
              "INSERT INTO runs (started, arguments, shard, host, boot_id, pid, pid_start) "
              "VALUES (?, ?, ?, ?, ?, ?, ?)")
        .bind(1, utc_now())
        .bind(2, arguments)
        .bind(3, shard)
        .bind(4, self.host)
        .bind(5, self.boot_id)
        .bind(6, self.pid)
        .bind(7, self.start_ticks)
        .run();
    return db_.last_insert_id();
}

void ResultsDb::end_run(std::int64_t run, bool interrupted) {
    Transaction t(db_);
    Statement(db_, "UPDATE runs SET finished = ?, status = ? WHERE run_id = ?")
        .bind(1, utc_now())
        .bind(2, interrupted ? "interrupted" : "finished")
        .bind(3, run)
        .run();
    Statement(db_, "DELETE FROM claims WHERE run_id = ?").bind(1, run).run();
    t.commit();
}

Claim ResultsDb::claim(std::int64_t run, const std::string& path, const std::optional<Fingerprint>& fingerprint,
                       bool force) {
    // One IMMEDIATE transaction: two batches deciding on the same image are serialised, so
    // exactly one of them takes it.
    Transaction t(db_);
    Statement holder(db_,
                     "SELECT c.run_id, r.host, r.boot_id, r.pid, r.pid_start FROM claims c "
                     "JOIN runs r ON r.run_id = c.run_id WHERE c.path = ? AND c.run_id != ? AND r.status = 'running'");
    holder.bind(1, path).bind(2, run);
    // A claim of a run whose process is gone is taken over (the run itself is marked
    // interrupted by the next batch that starts).
    if (holder.step() &&
        (holder.is_null(3) || may_be_alive({holder.text(1), holder.text(2), holder.integer(3), holder.integer(4)})))
        return {Claim::Kind::Busy, holder.integer(0)};
    if (!force && fingerprint && has_unchanged(path, *fingerprint)) return {Claim::Kind::Unchanged, 0};
    Statement(db_, "INSERT OR REPLACE INTO claims (path, run_id, claimed_at) VALUES (?, ?, ?)")
        .bind(1, path)
        .bind(2, run)
        .bind(3, utc_now())
        .run();
    t.commit();
    return {Claim::Kind::Taken, 0};
}

bool ResultsDb::has_unchanged(const std::string& path, const Fingerprint& fp) {
    Statement s(db_,
                "SELECT 1 FROM images WHERE path = ? AND status = 'ok' AND size = ? AND mtime_ns = ? "
                "AND header_hash = ? LIMIT 1");
    s.bind(1, path).bind(2, fp.size).bind(3, fp.mtime_ns).bind(4, fp.header_hash);
    return s.step();
}

void ResultsDb::store(std::int64_t run, const ImageResult& r) {
    Transaction t(db_);
    Statement image(
        db_,
        "INSERT INTO images (run_id, path, size, mtime_ns, header_hash, status, error, format, "
        "virtual_size, layers, allocated_bytes, bytes_read, seconds, analyzed_at, copy_commands_4m, "
        "copy_commands_16m) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    image.bind(1, run).bind(2, r.path).bind(3, r.fingerprint.size).bind(4, r.fingerprint.mtime_ns);
    image.bind(5, r.fingerprint.header_hash).bind(6, r.ok ? "ok" : "failed");
    if (r.ok)
        image.bind_null(7);
    else
        image.bind(7, r.error);
    // An image whose apply or compaction failed keeps the figures of its analysis.
    if (r.ok || r.apply || r.compact) {
        image.bind(8, r.format).bind(9, r.virtual_size).bind(10, r.layers).bind(11, r.allocated_bytes);
        image.bind(15, r.copy_commands_4m).bind(16, r.copy_commands_16m);
    } else {
        image.bind_null(8).bind_null(9).bind_null(10).bind_null(11).bind_null(15).bind_null(16);
    }
    image.bind(12, r.bytes_read).bind(13, r.seconds).bind(14, utc_now());
    image.run();
    const std::int64_t image_id = db_.last_insert_id();

    Statement volume(db_,
                     "INSERT INTO volumes (image_id, partition, start, length, cluster_size, total_clusters, "
                     "free_clusters, label, serial, mft_records_in_use) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement metrics(db_, "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement plan(db_, "INSERT INTO plans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement warning(db_, "INSERT INTO warnings VALUES (?, ?, ?, ?, ?)");
    for (const VolumeResult& v : r.volumes) {
        volume.bind(1, image_id).bind(2, v.partition).bind(3, v.start).bind(4, v.length);
        volume.bind(5, static_cast<std::int64_t>(v.cluster_size)).bind(6, v.total_clusters).bind(7, v.free_clusters);
        volume.bind(8, v.label).bind(9, hex(v.serial)).bind(10, v.mft_records_in_use).run();
        const std::int64_t volume_id = db_.last_insert_id();
        const FileFragmentation& f = v.files;
        metrics.bind(1, volume_id).bind(2, f.files).bind(3, f.fragmented_files).bind(4, f.fragments);
        metrics.bind(5, f.excess_fragments).bind(6, f.fragmented_bytes).bind(7, f.fragmentation_percent);
        metrics.bind(8, f.mft_fragments).bind(9, v.free_space.extents).bind(10, v.free_space.largest_extent_clusters);
        metrics.bind(11, v.free_space.fragmentation_percent).bind(12, v.reclaimable_bytes);
        metrics.bind(13, v.host.extents).bind(14, v.host.seeks).bind(15, v.host.backward_seeks);
        metrics.bind(16, v.host.fragmentation_percent).run();
        if (v.plan) {
            const PlanSummary& s = v.plan->summary;
            plan.bind(1, volume_id).bind(2, v.plan->strategy).bind(3, s.moves).bind(4, s.moved_bytes);
            plan.bind(5, s.fragments_before).bind(6, s.fragments_after).bind(7, s.granule_size);
            plan.bind(8, s.thin_growth_bytes).bind(9, s.clone_delta_growth_bytes);
            plan.bind(10, s.reclaimable_bytes_before).bind(11, s.reclaimable_bytes_after);
            plan.bind(12, v.plan->json).bind(13, v.plan->ios).bind(14, v.plan->first_writes);
            plan.bind(15, v.plan->seconds.hdd).bind(16, v.plan->seconds.ssd).bind(17, v.plan->seconds.array).run();
        }
        for (const ImpactWarning& w : v.warnings)
            warning.bind(1, volume_id).bind(2, w.code).bind(3, severity_name(w.severity)).bind(4, w.bytes)
                .bind(5, w.message)
                .run();
    }
    if (r.apply) store_apply(image_id, *r.apply);
    if (r.compact) store_compact(image_id, *r.compact);
    t.commit();
}

void ResultsDb::store_apply(std::int64_t image_id, const ApplyRecord& a) {
    Statement row(db_, "INSERT INTO applies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    row.bind(1, image_id).bind(2, a.partition).bind(3, a.output).bind(4, a.output_format);
    row.bind(5, a.ok ? "ok" : "failed");
    if (a.ok) {
        row.bind_null(6).bind(7, a.moves_planned).bind(8, a.moves_done).bind(9, a.moves_skipped());
        row.bind(10, a.bytes_moved).bind(11, a.disk_bytes_written).bind(12, a.output_file_bytes);
        row.bind(13, a.verification ? 1 : 0);
        if (const auto& v = a.verification) {
            row.bind(14, v->streams_hashed).bind(15, v->fragments_before).bind(16, v->fragments_predicted);
            row.bind(17, v->fragments_after);
        } else {
            row.bind_null(14).bind_null(15).bind_null(16).bind_null(17);
        }
        row.bind(18, a.seconds);
    } else {
        row.bind(6, a.error);
        for (int column = 7; column <= 18; ++column) row.bind_null(column);
    }
    row.run();
    Statement skip(db_, "INSERT INTO apply_skips VALUES (?, ?, ?)");
    for (const auto& [reason, moves] : a.skipped_by_reason) skip.bind(1, image_id).bind(2, reason).bind(3, moves).run();
}

void ResultsDb::store_compact(std::int64_t image_id, const CompactRecord& c) {
    Statement row(db_,
                  "INSERT INTO compactions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                  "?, ?, ?, ?)");
    row.bind(1, image_id).bind(2, c.output).bind(3, c.output_format).bind(4, c.ok ? "ok" : "failed");
    if (!c.ok) {
        row.bind(5, c.error);
        for (int column = 6; column <= 23; ++column) row.bind_null(column);
        row.run();
        return;
    }
    row.bind_null(5).bind(6, c.granule).bind(7, c.packed ? 1 : 0).bind(8, c.volumes);
    row.bind(9, c.moves_planned).bind(10, c.moves_done).bind(11, c.moves_skipped).bind(12, c.bytes_moved);
    row.bind(13, c.granules_input).bind(14, c.granules_sparsified).bind(15, c.granules_packed);
    row.bind(16, c.granules_output).bind(17, c.host_bytes_input).bind(18, c.host_bytes_output);
    row.bind(19, c.data_bytes_output).bind(20, c.output_file_bytes).bind(21, c.verified ? 1 : 0);
    if (c.verified)
        row.bind(22, c.streams_hashed);
    else
        row.bind_null(22);
    row.bind(23, c.seconds).run();
}

std::vector<HistoryRow> ResultsDb::history(const std::string& path, std::optional<int> partition) {
    Statement s(db_,
                "SELECT i.analyzed_at, i.status, coalesce(i.error, ''), coalesce(v.partition, 0), "
                "coalesce(m.fragmentation_percent, 0), coalesce(m.fragmented_files, 0), "
                "coalesce(m.excess_fragments, 0), coalesce(m.free_space_fragmentation_percent, 0), "
                "coalesce(m.free_extents, 0), coalesce(v.free_clusters * v.cluster_size, 0), "
                "m.host_seeks, m.host_fragmentation_percent "
                "FROM images i LEFT JOIN volumes v ON v.image_id = i.image_id "
                "LEFT JOIN metrics m ON m.volume_id = v.volume_id "
                "WHERE i.path = ? AND (? IS NULL OR v.partition = ? OR i.status = 'failed') "
                "ORDER BY i.image_id, v.partition");
    s.bind(1, path).bind(2, partition).bind(3, partition);
    std::vector<HistoryRow> rows;
    while (s.step()) {
        HistoryRow h;
        h.analyzed_at = s.text(0);
        h.status = s.text(1);
        h.error = s.text(2);
        h.partition = static_cast<int>(s.integer(3));
        h.fragmentation_percent = s.real(4);
        h.fragmented_files = static_cast<std::uint64_t>(s.integer(5));
        h.excess_fragments = static_cast<std::uint64_t>(s.integer(6));
        h.free_space_fragmentation_percent = s.real(7);
        h.free_extents = static_cast<std::uint64_t>(s.integer(8));
        h.free_bytes = static_cast<std::uint64_t>(s.integer(9));
        if (!s.is_null(10)) h.host_seeks = static_cast<std::uint64_t>(s.integer(10));
        if (!s.is_null(11)) h.host_fragmentation_percent = s.real(11);
        rows.push_back(std::move(h));
    }
    return rows;
}

void ResultsDb::merge_from(const std::string& other) {
    {
        // Opening it checks that it is a results database of a schema we know.
        const ResultsDb source(other, false);
    }
    Statement(db_, "ATTACH DATABASE ? AS source").bind(1, other).run();
    try {
        Transaction t(db_);
        // Every id of the source is shifted past this database's largest, which keeps the
        // source's references intact and the merged rows in their original order.
        const std::string runs = std::to_string(scalar(db_, "SELECT coalesce(max(run_id), 0) FROM main.runs"));
        const std::string images = std::to_string(scalar(db_, "SELECT coalesce(max(image_id), 0) FROM main.images"));
        const std::string volumes =
            std::to_string(scalar(db_, "SELECT coalesce(max(volume_id), 0) FROM main.volumes"));
        db_.exec("INSERT INTO main.runs SELECT run_id + " + runs +
                 ", started, finished, status, arguments, shard, host, boot_id, pid, pid_start "
                 "FROM source.runs ORDER BY run_id");
        db_.exec("INSERT INTO main.images SELECT image_id + " + images + ", run_id + " + runs +
                 ", path, size, mtime_ns, header_hash, status, error, format, virtual_size, layers, "
                 "allocated_bytes, bytes_read, seconds, analyzed_at, copy_commands_4m, copy_commands_16m "
                 "FROM source.images ORDER BY image_id");
        db_.exec("INSERT INTO main.volumes SELECT volume_id + " + volumes + ", image_id + " + images +
                 ", partition, start, length, cluster_size, total_clusters, free_clusters, label, serial, "
                 "mft_records_in_use FROM source.volumes ORDER BY volume_id");
        db_.exec("INSERT INTO main.metrics SELECT volume_id + " + volumes +
                 ", files, fragmented_files, fragments, excess_fragments, fragmented_bytes, "
                 "fragmentation_percent, mft_fragments, free_extents, largest_free_extent_clusters, "
                 "free_space_fragmentation_percent, reclaimable_bytes, host_extents, host_seeks, "
                 "host_backward_seeks, host_fragmentation_percent FROM source.metrics");
        db_.exec("INSERT INTO main.plans SELECT volume_id + " + volumes +
                 ", strategy, moves, moved_bytes, fragments_before, fragments_after, granule_size, "
                 "thin_growth_bytes, clone_delta_growth_bytes, reclaimable_bytes_before, reclaimable_bytes_after, "
                 "plan_json, plan_ios, plan_first_writes, plan_seconds_hdd, plan_seconds_ssd, plan_seconds_array "
                 "FROM source.plans");
        db_.exec("INSERT INTO main.warnings SELECT volume_id + " + volumes +
                 ", code, severity, bytes, message FROM source.warnings ORDER BY rowid");
        db_.exec("INSERT INTO main.applies SELECT image_id + " + images +
                 ", partition, output, output_format, status, error, moves_planned, moves_done, moves_skipped, "
                 "bytes_moved, disk_bytes_written, output_file_bytes, verified, streams_hashed, fragments_before, "
                 "fragments_predicted, fragments_after, seconds FROM source.applies ORDER BY image_id");
        db_.exec("INSERT INTO main.apply_skips SELECT image_id + " + images +
                 ", reason, moves FROM source.apply_skips ORDER BY rowid");
        db_.exec(
            "INSERT INTO main.compactions SELECT image_id + " + images +
            ", output, output_format, status, error, granule_bytes, packed, volumes, moves_planned, "
            "moves_done, moves_skipped, bytes_moved, granules_input, granules_sparsified, granules_packed, "
            "granules_output, host_bytes_input, host_bytes_output, data_bytes_output, output_file_bytes, "
            "verified, streams_hashed, seconds FROM source.compactions ORDER BY image_id");
        t.commit();
    } catch (...) {
        db_.exec("DETACH DATABASE source");
        throw;
    }
    db_.exec("DETACH DATABASE source");
}

}  // namespace guestfrag::batch
