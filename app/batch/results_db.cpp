// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/results_db.hpp"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <map>
#include <optional>

#include "app/batch/database.hpp"
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
  pid_start INTEGER,
  heartbeat INTEGER
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
  copy_commands_16m INTEGER,
  datastore         TEXT,
  copy_relaid_commands_4m  INTEGER,
  copy_relaid_commands_16m INTEGER
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

// Schema 9: the verdict on each volume with `batch --verdict` (docs/verdict.md). Keep in
// step with docs/batch.md.
constexpr const char* kVerdictTable = R"sql(
CREATE TABLE verdicts (
  volume_id       INTEGER PRIMARY KEY REFERENCES volumes(volume_id),
  device          TEXT NOT NULL,
  workload        TEXT NOT NULL,
  now_seconds     REAL NOT NULL,
  strategy        TEXT,
  plan_order      TEXT,
  saved_seconds   REAL,
  plan_io_seconds REAL,
  growth_bytes    INTEGER,
  moved_bytes     INTEGER,
  reason          TEXT NOT NULL,
  blockers        TEXT
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

// Upgrade steps: step N turns a database of schema N - 1 into one of schema N. They run in
// order, inside one transaction, from the database's version on.

/// Schema 2 only adds columns; rows of schema 1 keep NULL there ("not measured").
void upgrade_to_2(Connection& db) {
    for (const char* column : {"host_extents INTEGER", "host_seeks INTEGER", "host_backward_seeks INTEGER",
                               "host_fragmentation_percent REAL"})
        db.exec_ddl(std::string("ALTER TABLE metrics ADD COLUMN ") + column);
}

/// Schema 3: runs know their process (NULL for older runs: never taken for dead), and
/// claims keep concurrent runs off each other's images.
void upgrade_to_3(Connection& db) {
    for (const char* column : {"host TEXT", "boot_id TEXT", "pid INTEGER", "pid_start INTEGER"})
        db.exec_ddl(std::string("ALTER TABLE runs ADD COLUMN ") + column);
    db.exec_ddl(
        "CREATE TABLE claims (path TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(run_id), "
        "claimed_at TEXT NOT NULL)");
}

/// Schema 4 adds the apply tables; older images simply have no apply rows.
void upgrade_to_4(Connection& db) { db.exec_ddl(kApplyTables); }

/// Schema 5: the copy figures of each image (docs/copy.md); NULL in older rows ("not
/// measured").
void upgrade_to_5(Connection& db) {
    for (const char* column : {"copy_commands_4m INTEGER", "copy_commands_16m INTEGER"})
        db.exec_ddl(std::string("ALTER TABLE images ADD COLUMN ") + column);
}

/// Schema 6 adds the compactions table; older images simply have no compaction rows.
void upgrade_to_6(Connection& db) { db.exec_ddl(kCompactTable); }

/// Schema 7: the plan's own IO on the device models (docs/impact.md §10); NULL in older rows
/// ("not measured").
void upgrade_to_7(Connection& db) {
    for (const char* column : {"plan_ios INTEGER", "plan_first_writes INTEGER", "plan_seconds_hdd REAL",
                               "plan_seconds_ssd REAL", "plan_seconds_array REAL"})
        db.exec_ddl(std::string("ALTER TABLE plans ADD COLUMN ") + column);
}

/// Schema 8: what the fleet view ranks by: the file system an image lives on and the copy
/// commands of its data re-laid (docs/copy.md §2); NULL in older rows ("not measured"). And the
/// runs' heartbeat, NULL for older runs (never taken for dead on another host).
void upgrade_to_8(Connection& db) {
    db.exec_ddl("ALTER TABLE runs ADD COLUMN heartbeat INTEGER");
    for (const char* column :
         {"datastore TEXT", "copy_relaid_commands_4m INTEGER", "copy_relaid_commands_16m INTEGER"})
        db.exec_ddl(std::string("ALTER TABLE images ADD COLUMN ") + column);
}

/// Schema 9 adds the verdicts table; older volumes simply have no verdict rows.
void upgrade_to_9(Connection& db) { db.exec_ddl(kVerdictTable); }

/// Schema 10: the storage work the chosen plan causes once (docs/verdict.md §2), which the
/// rule and the fleet's gain weigh; NULL in older rows ("not measured").
void upgrade_to_10(Connection& db) { db.exec_ddl("ALTER TABLE verdicts ADD COLUMN work_seconds REAL"); }

struct UpgradeStep {
    int to;
    void (*run)(Connection&);
};
constexpr UpgradeStep kUpgrades[] = {{2, upgrade_to_2}, {3, upgrade_to_3}, {4, upgrade_to_4},
                                     {5, upgrade_to_5}, {6, upgrade_to_6}, {7, upgrade_to_7},
                                     {8, upgrade_to_8}, {9, upgrade_to_9}, {10, upgrade_to_10}};
static_assert(std::size(kUpgrades) == kSchemaVersion - 1, "one upgrade step per schema version");

}  // namespace

ResultsDb::ResultsDb(const std::string& target, bool create) : db_(open_database(target, create)) {
    // A database of this schema is used as it is (no write lock taken: `history` reads a file
    // it may not write). Otherwise it is checked again, and created or upgraded, in one
    // transaction that excludes every other opener's: shards of one batch starting at once on
    // an empty PostgreSQL database create its tables once.
    std::int64_t version = db_->schema_version();
    if (version != kSchemaVersion) {
        Transaction t(*db_);
        db_->lock_schema();
        version = db_->schema_version();
        if (version > kSchemaVersion)
            throw Error(ErrorKind::Unsupported, "results database of a newer guestfrag (schema " +
                                                    std::to_string(version) + ")");
        if (version == 0) {
            if (db_->tables() != 0) throw Error(ErrorKind::Unsupported, "not a guestfrag results database");
            if (!create) throw Error(ErrorKind::NotFound, "empty results database");
            create_schema();
        } else if (version < kSchemaVersion) {
            upgrade_from(version);
        }
        t.commit();
    }
    // WAL: `history` and other readers never block a running batch, and a crash mid-write
    // leaves the last committed image intact. (PostgreSQL readers never block writers.)
    if (!db_->postgres()) db_->exec("PRAGMA journal_mode = WAL");
}

void ResultsDb::create_schema() {
    db_->exec_ddl(kSchema);
    db_->exec_ddl(kApplyTables);
    db_->exec_ddl(kCompactTable);
    db_->exec_ddl(kVerdictTable);
    // Its column of schema 10 comes after schema 9's, in an older database and a new one
    // alike (rows are inserted by position).
    upgrade_to_10(*db_);
    db_->set_schema_version(kSchemaVersion);
}

void ResultsDb::upgrade_from(std::int64_t version) {
    // One step per schema, each taking the database from the version before it: a database
    // of any older schema runs the steps it is missing, in order (in the opener's transaction).
    for (const UpgradeStep& step : kUpgrades)
        if (version < step.to) step.run(*db_);
    db_->set_schema_version(kSchemaVersion);
}

namespace {

std::int64_t unix_now() { return static_cast<std::int64_t>(std::time(nullptr)); }

/// Whether the running run whose owner and heartbeat are columns `first` … `first` + 4 of `s`
/// (host, boot_id, pid, pid_start, heartbeat) may still be working. On its own host the
/// process itself is checked; elsewhere its heartbeat, when it has one, must be younger than
/// the lease.
bool run_may_be_alive(const Statement& s, int first) {
    if (s.is_null(first + 2)) return true;  // a run stored before schema 3: no owner recorded
    const ProcessOwner owner{s.text(first), s.text(first + 1), s.integer(first + 2), s.integer(first + 3)};
    if (owner.host == this_process().host || s.is_null(first + 4)) return may_be_alive(owner);
    return unix_now() - s.integer(first + 4) < kRunLeaseSeconds;
}

}  // namespace

void ResultsDb::heartbeat(std::int64_t run) {
    Statement(*db_, "UPDATE runs SET heartbeat = ? WHERE run_id = ? AND status = 'running'")
        .bind(1, unix_now())
        .bind(2, run)
        .run();
}

std::vector<std::int64_t> ResultsDb::end_dead_runs() {
    std::vector<std::int64_t> dead;
    {
        Statement s(*db_,
                    "SELECT run_id, host, boot_id, pid, pid_start, heartbeat FROM runs WHERE status = 'running'");
        while (s.step())
            if (!run_may_be_alive(s, 1)) dead.push_back(s.integer(0));
    }
    for (const std::int64_t run : dead) end_run(run, true);
    return dead;
}

std::int64_t ResultsDb::begin_run(const std::string& arguments, const std::string& shard) {
    const ProcessOwner self = this_process();
    return Statement(*db_,
              "INSERT INTO runs (started, arguments, shard, host, boot_id, pid, pid_start, heartbeat) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING run_id")
        .bind(1, utc_now())
        .bind(2, arguments)
        .bind(3, shard)
        .bind(4, self.host)
        .bind(5, self.boot_id)
        .bind(6, self.pid)
        .bind(7, self.start_ticks)
        .bind(8, unix_now())
        .insert();
}

void ResultsDb::end_run(std::int64_t run, bool interrupted) {
    Transaction t(*db_);
    Statement(*db_, "UPDATE runs SET finished = ?, status = ? WHERE run_id = ?")
        .bind(1, utc_now())
        .bind(2, interrupted ? "interrupted" : "finished")
        .bind(3, run)
        .run();
    Statement(*db_, "DELETE FROM claims WHERE run_id = ?").bind(1, run).run();
    t.commit();
}

Claim ResultsDb::claim(std::int64_t run, const std::string& path, const std::optional<Fingerprint>& fingerprint,
                       bool force) {
    // One transaction that holds the claim row: two batches deciding on the same image are
    // serialised (SQLite: the write lock; PostgreSQL: the row's unique key and lock), so
    // exactly one of them takes it.
    Transaction t(*db_);
    Statement take(*db_,
                   "INSERT INTO claims (path, run_id, claimed_at) VALUES (?, ?, ?) "
                   "ON CONFLICT (path) DO NOTHING RETURNING run_id");
    const bool taken = take.bind(1, path).bind(2, run).bind(3, utc_now()).step();
    take.reset();
    if (!taken) {
        Statement holder(*db_,
                         "SELECT c.run_id, r.status, r.host, r.boot_id, r.pid, r.pid_start, r.heartbeat FROM claims c "
                         "JOIN runs r ON r.run_id = c.run_id WHERE c.path = ?" +
                             db_->lock_rows("c"));
        // No row: another batch's transaction is deciding on this image right now.
        if (!holder.bind(1, path).step()) return {Claim::Kind::Busy, 0};
        // A claim of a run whose process is gone is taken over (the run itself is marked
        // interrupted by the next batch that starts).
        const std::int64_t holder_run = holder.integer(0);
        if (holder_run != run && holder.text(1) == "running" && run_may_be_alive(holder, 2))
            return {Claim::Kind::Busy, holder_run};
        Statement(*db_, "UPDATE claims SET run_id = ?, claimed_at = ? WHERE path = ?")
            .bind(1, run)
            .bind(2, utc_now())
            .bind(3, path)
            .run();
    }
    // Unchanged: the transaction is rolled back, so the image stays unclaimed.
    if (!force && fingerprint && has_unchanged(path, *fingerprint)) return {Claim::Kind::Unchanged, 0};
    t.commit();
    return {Claim::Kind::Taken, 0};
}

bool ResultsDb::has_unchanged(const std::string& path, const Fingerprint& fp) {
    Statement s(*db_,
                "SELECT 1 FROM images WHERE path = ? AND status = 'ok' AND size = ? AND mtime_ns = ? "
                "AND header_hash = ? LIMIT 1");
    s.bind(1, path).bind(2, fp.size).bind(3, fp.mtime_ns).bind(4, fp.header_hash);
    return s.step();
}

void ResultsDb::store(std::int64_t run, const ImageResult& r) {
    Transaction t(*db_);
    Statement image(
        *db_,
        "INSERT INTO images (run_id, path, size, mtime_ns, header_hash, status, error, format, "
        "virtual_size, layers, allocated_bytes, bytes_read, seconds, analyzed_at, copy_commands_4m, "
        "copy_commands_16m, datastore, copy_relaid_commands_4m, copy_relaid_commands_16m) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING image_id");
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
        image.bind(18, r.copy_relaid_commands_4m).bind(19, r.copy_relaid_commands_16m);
    } else {
        image.bind_null(8).bind_null(9).bind_null(10).bind_null(11).bind_null(15).bind_null(16);
        image.bind_null(18).bind_null(19);
    }
    image.bind(17, r.datastore);
    image.bind(12, r.bytes_read).bind(13, r.seconds).bind(14, utc_now());
    const std::int64_t image_id = image.insert();

    Statement volume(*db_,
                     "INSERT INTO volumes (image_id, partition, start, length, cluster_size, total_clusters, "
                     "free_clusters, label, serial, mft_records_in_use) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                     "RETURNING volume_id");
    Statement metrics(*db_, "INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement plan(*db_, "INSERT INTO plans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement warning(*db_, "INSERT INTO warnings VALUES (?, ?, ?, ?, ?)");
    Statement verdict(*db_, "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const VolumeResult& v : r.volumes) {
        volume.bind(1, image_id).bind(2, v.partition).bind(3, v.start).bind(4, v.length);
        volume.bind(5, static_cast<std::int64_t>(v.cluster_size)).bind(6, v.total_clusters).bind(7, v.free_clusters);
        volume.bind(8, v.label).bind(9, hex(v.serial)).bind(10, v.mft_records_in_use);
        const std::int64_t volume_id = volume.insert();
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
        if (const auto& d = v.verdict) {
            // NULL where there is nothing: no plan chosen, no order, no blocker.
            const auto some = [](bool present, auto value) {
                return present ? std::optional(value) : std::nullopt;
            };
            const bool chosen = !d->strategy.empty();
            std::string blockers;
            for (const std::string& b : d->blockers) blockers += (blockers.empty() ? "" : "\n") + b;
            verdict.bind(1, volume_id).bind(2, d->device).bind(3, d->workload).bind(4, d->now_seconds);
            verdict.bind(5, some(chosen, d->strategy)).bind(6, some(!d->order.empty(), d->order));
            verdict.bind(7, some(chosen, d->saved_seconds)).bind(8, some(chosen, d->plan_io_seconds));
            verdict.bind(9, some(chosen, d->growth_bytes)).bind(10, some(chosen, d->moved_bytes));
            verdict.bind(11, d->reason).bind(12, some(!blockers.empty(), blockers));
            verdict.bind(13, some(chosen, d->work_seconds)).run();
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
    Statement row(*db_, "INSERT INTO applies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
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
    Statement skip(*db_, "INSERT INTO apply_skips VALUES (?, ?, ?)");
    for (const auto& [reason, moves] : a.skipped_by_reason) skip.bind(1, image_id).bind(2, reason).bind(3, moves).run();
}

void ResultsDb::store_compact(std::int64_t image_id, const CompactRecord& c) {
    Statement row(*db_,
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
    Statement s(*db_,
                "SELECT i.analyzed_at, i.status, coalesce(i.error, ''), coalesce(v.partition, 0), "
                "coalesce(m.fragmentation_percent, 0), coalesce(m.fragmented_files, 0), "
                "coalesce(m.excess_fragments, 0), coalesce(m.free_space_fragmentation_percent, 0), "
                "coalesce(m.free_extents, 0), coalesce(v.free_clusters * v.cluster_size, 0), "
                "m.host_seeks, m.host_fragmentation_percent "
                "FROM images i LEFT JOIN volumes v ON v.image_id = i.image_id "
                "LEFT JOIN metrics m ON m.volume_id = v.volume_id "
                "WHERE i.path = ? AND (CAST(? AS BIGINT) IS NULL OR v.partition = ? OR i.status = 'failed') "
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

namespace {

/// Copies every row of `table` from `source` to `target`, in the order of `order_by`. The
/// table's own id (when `id` is given) is assigned by the target and recorded in `ids`
/// (source id to target id); the columns of `references` are translated through their maps.
void copy_rows(Connection& source, Connection& target, const std::string& table, const std::string& order_by,
               const char* id, const std::vector<std::pair<std::string, const std::map<std::int64_t, std::int64_t>*>>& references,
               std::map<std::int64_t, std::int64_t>* ids) {
    Statement rows(source, "SELECT * FROM " + table + " ORDER BY " + order_by);
    std::optional<Statement> insert;
    int id_column = -1;
    std::vector<const std::map<std::int64_t, std::int64_t>*> maps;
    while (rows.step()) {
        if (!insert) {
            // The columns by name: a source upgraded in place has them in the same order,
            // but naming them does not depend on it.
            std::string columns, values;
            for (int c = 0; c < rows.columns(); ++c) {
                const std::string name = rows.column_name(c);
                maps.push_back(nullptr);
                for (const auto& [column, map] : references)
                    if (column == name) maps.back() = map;
                if (id && name == id) {
                    id_column = c;
                    continue;
                }
                columns += (columns.empty() ? "" : ", ") + name;
                values += values.empty() ? "?" : ", ?";
            }
            insert.emplace(target, "INSERT INTO " + table + " (" + columns + ") VALUES (" + values + ")" +
                                       (id ? std::string(" RETURNING ") + id : std::string()));
        }
        int parameter = 0;
        for (int c = 0; c < rows.columns(); ++c) {
            if (c == id_column) continue;
            SqlValue value = rows.value(c);
            if (maps[static_cast<std::size_t>(c)] && std::holds_alternative<std::int64_t>(value)) {
                const auto& map = *maps[static_cast<std::size_t>(c)];
                const auto it = map.find(std::get<std::int64_t>(value));
                if (it == map.end()) throw Error(ErrorKind::Corrupt, table + " refers to a row that is not there");
                value = it->second;
            }
            insert->bind_value(++parameter, value);
        }
        if (id)
            (*ids)[rows.integer(id_column)] = insert->insert();
        else
            insert->run();
    }
}

}  // namespace

void ResultsDb::merge_from(const std::string& other) {
    // Opening it checks that it is a results database of a schema we know (and upgrades it).
    ResultsDb source(other, false);
    Connection& from = *source.db_;
    Transaction t(*db_);
    std::map<std::int64_t, std::int64_t> runs, images, volumes;
    copy_rows(from, *db_, "runs", "run_id", "run_id", {}, &runs);
    copy_rows(from, *db_, "images", "image_id", "image_id", {{"run_id", &runs}}, &images);
    copy_rows(from, *db_, "volumes", "volume_id", "volume_id", {{"image_id", &images}}, &volumes);
    for (const char* table : {"metrics", "plans", "verdicts"})
        copy_rows(from, *db_, table, "volume_id", nullptr, {{"volume_id", &volumes}}, nullptr);
    // Within one volume (one image) the source's order: its index is on the id alone, so ties
    // come in insertion order in SQLite; the rowid makes that explicit.
    const std::string in_order = from.postgres() ? "" : ", rowid";
    copy_rows(from, *db_, "warnings", "volume_id" + in_order, nullptr, {{"volume_id", &volumes}}, nullptr);
    copy_rows(from, *db_, "applies", "image_id", nullptr, {{"image_id", &images}}, nullptr);
    copy_rows(from, *db_, "apply_skips", "image_id" + in_order, nullptr, {{"image_id", &images}}, nullptr);
    copy_rows(from, *db_, "compactions", "image_id", nullptr, {{"image_id", &images}}, nullptr);
    t.commit();
}

}  // namespace guestfrag::batch
