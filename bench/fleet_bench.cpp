// SPDX-License-Identifier: GPL-2.0-or-later
// The fleet on PostgreSQL (docs/batch.md): IMAGES image results (two volumes with metrics, a
// plan with its JSON and three warnings each, as `batch --plan` stores them) written by SHARDS
// concurrent batches, each on its own connection claiming and storing one image per
// transaction; then `fleet` over the database grown to FLEET images. The anchor, in the same
// run on the same server: one INSERT … SELECT of as many rows as the batches wrote, the
// server's own floor for that many rows.
// Usage: guestfrag_bench_fleet DSN [IMAGES] [SHARDS] [FLEET]   (DSN: an empty database)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "app/batch/database.hpp"
#include "app/batch/fleet.hpp"

namespace {

using namespace guestfrag;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

batch::ImageResult synthetic(std::size_t i) {
    batch::ImageResult r;
    r.path = "/datastores/ds" + std::to_string(i % 10) + "/vm" + std::to_string(i) + "/vm" +
             std::to_string(i) + ".vmdk";
    r.fingerprint = {40ull << 30, static_cast<std::int64_t>(i), "0123456789ABCDEF"};
    r.ok = true;
    r.format = "vmdk";
    r.virtual_size = 40ull << 30;
    r.layers = 1;
    r.allocated_bytes = 20ull << 30;
    r.copy_commands_4m = 5000 + i % 977;
    r.copy_relaid_commands_4m = 5000;
    r.datastore = "/datastores/ds" + std::to_string(i % 10);
    for (int partition = 1; partition <= 2; ++partition) {
        batch::VolumeResult v;
        v.partition = partition;
        v.length = 20ull << 30;
        v.cluster_size = 4096;
        v.total_clusters = 5242880;
        v.free_clusters = 1048576 + static_cast<std::int64_t>(i % 4096);
        v.label = "System";
        v.files.files = 120000;
        v.files.fragmented_files = 1000 + i % 3000;
        v.files.fragmentation_percent = 100.0 * static_cast<double>(v.files.fragmented_files) / 120000.0;
        v.reclaimable_bytes = (i % 1000) << 20;
        auto& plan = v.plan.emplace();
        plan.strategy = "thin-safe";
        plan.summary.moves = 2000;
        plan.summary.thin_growth_bytes = (i % 100) << 20;
        plan.json = std::string(16384, 'x');  // a plan document's size, not its content
        for (const char* code : {"THIN_GROWTH", "SNAPSHOT_DELTA", "COPY_ADVICE"})
            v.warnings.push_back({code, Severity::Info, 1 << 20, "synthetic"});
        r.volumes.push_back(std::move(v));
    }
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: guestfrag_bench_fleet DSN [IMAGES] [SHARDS] [FLEET]\n");
        return 1;
    }
    const std::string dsn = argv[1];
    const std::size_t images = argc > 2 ? std::stoul(argv[2]) : 10000;
    const std::size_t shards = argc > 3 ? std::stoul(argv[3]) : 8;
    const std::size_t fleet_images = argc > 4 ? std::stoul(argv[4]) : 100000;
    { batch::ResultsDb create(dsn, true); }

    const auto start = Clock::now();
    {
        std::vector<std::jthread> tasks;
        for (std::size_t shard = 0; shard < shards; ++shard)
            tasks.emplace_back([&, shard] {
                batch::ResultsDb db(dsn, false);
                const std::int64_t run =
                    db.begin_run("bench", std::to_string(shard + 1) + "/" + std::to_string(shards));
                for (std::size_t i = shard; i < images; i += shards) {
                    const batch::ImageResult r = synthetic(i);
                    if (db.claim(run, r.path, r.fingerprint, false).kind == batch::Claim::Kind::Taken)
                        db.store(run, r);
                }
                db.end_run(run, false);
            });
    }
    const double wall = since(start);

    const auto pg = batch::open_database(dsn, false);
    const auto count = [&](const char* sql) {
        batch::Statement s(*pg, sql);
        return s.step() ? s.integer(0) : 0;
    };
    const std::int64_t rows = count(
        "SELECT (SELECT count(*) FROM images) + (SELECT count(*) FROM volumes) + "
        "(SELECT count(*) FROM metrics) + (SELECT count(*) FROM plans) + "
        "(SELECT count(*) FROM warnings)");
    pg->exec("CREATE TABLE anchor (id BIGINT, payload TEXT)");
    auto anchored = Clock::now();
    pg->exec("INSERT INTO anchor SELECT g, md5(g::text) FROM generate_series(1, " + std::to_string(rows) +
             ") g");
    const double anchor = since(anchored);
    pg->exec("DROP TABLE anchor");

    // The database grown to FLEET images: copies of the rows with shifted ids and paths,
    // made by the server (the batches' speed is measured above).
    const std::size_t copies = fleet_images > images ? (fleet_images + images - 1) / images - 1 : 0;
    pg->exec("BEGIN");
    const std::string mi = std::to_string(count("SELECT max(image_id) FROM images"));
    const std::string mv = std::to_string(count("SELECT max(volume_id) FROM volumes"));
    const std::string g = "generate_series(1, " + std::to_string(copies) + ") g";
    pg->exec(
        "INSERT INTO images SELECT image_id + g * " + mi +
        ", run_id, path || '#' || g, size, mtime_ns, header_hash, "
        "status, error, format, virtual_size, layers, allocated_bytes, bytes_read, seconds, analyzed_at, "
        "copy_commands_4m, copy_commands_16m, datastore, copy_relaid_commands_4m, copy_relaid_commands_16m "
        "FROM images CROSS JOIN " +
        g);
    pg->exec("INSERT INTO volumes SELECT volume_id + g * " + mv + ", image_id + g * " + mi +
             ", partition, start, length, cluster_size, total_clusters, free_clusters, label, serial, "
             "mft_records_in_use "
             "FROM volumes CROSS JOIN " +
             g);
    pg->exec(
        "INSERT INTO metrics SELECT volume_id + g * " + mv +
        ", files, fragmented_files, fragments, excess_fragments, fragmented_bytes, fragmentation_percent, "
        "mft_fragments, free_extents, largest_free_extent_clusters, free_space_fragmentation_percent, "
        "reclaimable_bytes, host_extents, host_seeks, host_backward_seeks, host_fragmentation_percent "
        "FROM metrics CROSS JOIN " +
        g);
    pg->exec(
        "INSERT INTO plans SELECT volume_id + g * " + mv +
        ", strategy, moves, moved_bytes, fragments_before, fragments_after, granule_size, thin_growth_bytes, "
        "clone_delta_growth_bytes, reclaimable_bytes_before, reclaimable_bytes_after, plan_json, plan_ios, "
        "plan_first_writes, plan_seconds_hdd, plan_seconds_ssd, plan_seconds_array FROM plans CROSS JOIN " +
        g);
    pg->exec("COMMIT; ANALYZE");
    batch::ResultsDb db(dsn, false);
    double fleet_best = 1e300;
    std::size_t ranked = 0;
    for (int repeat = 0; repeat < 3; ++repeat) {
        const auto t = Clock::now();
        ranked = batch::fleet_report(db, batch::FleetRank::Fragmentation).images.size();
        fleet_best = std::min(fleet_best, since(t));
    }
    std::printf(
        "{\"images\": %zu, \"shards\": %zu, \"rows\": %lld, \"wall_seconds\": %.2f, "
        "\"anchor_insert_seconds\": %.3f, \"wall_over_anchor\": %.1f, "
        "\"fleet_images\": %zu, \"fleet_seconds\": %.3f}\n",
        images, shards, static_cast<long long>(rows), wall, anchor, wall / anchor, ranked, fleet_best);
    return 0;
}
