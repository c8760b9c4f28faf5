// SPDX-License-Identifier: GPL-2.0-or-later
// The fleet as it runs for real: a Slurm job array (packaging/slurm/guestfrag-batch.sbatch) on a
// one-node cluster the test starts, every task writing into one PostgreSQL database the test
// starts too.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/batch/database.hpp"
#include "app/batch/image_list.hpp"
#include "support/batch_results.hpp"
#include "support/fixtures.hpp"
#include "support/postgres_server.hpp"
#include "support/slurm_cluster.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;
using test::db_integer;

TEST_CASE("a Slurm job array of batch shards writes 40 images into one PostgreSQL database, each once",
          "[batch][postgres][slurm]") {
    const test::PostgresServer pg;
    const test::SlurmCluster slurm;
    const test::Scratch store{test::scratch_dir() / ("slurm-images." + std::to_string(::getpid()))};
    fs::create_directories(store.dir);
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 40;
    o.seed = 7;
    const fs::path image = test::generated_image("slurm-32m", o);
    const fs::path list = store.dir / "images.list";
    {
        std::ofstream paths(list);
        for (int i = 0; i < 40; ++i) {
            const fs::path copy = store.dir / ("vm" + std::to_string(i) + ".img");
            REQUIRE(test::run({"cp", "--sparse=always", image.string(), copy.string()}).status == 0);
            paths << copy.string() << '\n';
        }
    }
    const fs::path script = fs::path(GUESTFRAG_TESTDATA_DIR).parent_path().parent_path() / "packaging" / "slurm" /
                            "guestfrag-batch.sbatch";
    REQUIRE(fs::exists(script));
    const std::string db = pg.uri();
    // --wait: sbatch returns when every task has ended, with a failure if any task failed.
    const auto submitted = slurm.client({"timeout", "170", "sbatch", "--wait", "--array=0-3",
                                         "--output=" + store.dir.string() + "/task-%a.out",
                                         "--export=ALL,GUESTFRAG=" + std::string(GUESTFRAG_CLI) +
                                             ",GUESTFRAG_LIST=" + list.string() + ",GUESTFRAG_DB=" + db,
                                         script.string()});
    INFO(submitted.out << submitted.err);
    for (int task = 0; task < 4; ++task) {
        INFO("task " << task << ": "
                     << test::file_contents(store.dir / ("task-" + std::to_string(task) + ".out")));
    }
    REQUIRE(submitted.status == 0);

    // Every image exactly once, by four runs that are the four shards, all finished.
    CHECK(db_integer(db, "SELECT count(*) FROM images") == 40);
    CHECK(db_integer(db, "SELECT count(DISTINCT path) FROM images") == 40);
    CHECK(db_integer(db, "SELECT count(*) FROM images WHERE status = 'ok'") == 40);
    CHECK(db_integer(db, "SELECT count(*) FROM runs WHERE status = 'finished'") == 4);
    CHECK(db_integer(db, "SELECT count(DISTINCT shard) FROM runs WHERE shard IN ('1/4', '2/4', '3/4', '4/4')") == 4);
    CHECK(db_integer(db, "SELECT count(*) FROM claims") == 0);
    // Each image in the shard its path hash gives (docs/batch.md): the runs agree with
    // batch::in_shard, computed here apart from the tasks.
    const auto d = batch::open_database(db, false);
    batch::Statement rows(*d, "SELECT i.path, r.shard FROM images i JOIN runs r USING (run_id)");
    int checked = 0;
    while (rows.step()) {
        const std::string shard = rows.text(1);
        CHECK(batch::in_shard(rows.text(0), {static_cast<std::uint32_t>(std::stoul(shard)), 4}));
        ++checked;
    }
    CHECK(checked == 40);
}
