// SPDX-License-Identifier: GPL-2.0-or-later
// What the batch tests share: a datastore of generated images, batches started in the
// background, and what they read back: rows of a results database (a file or a
// postgresql:// URI), the JSON lines `batch --json` printed, and the files a batch left in its
// output directory.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <thread>
#include <tuple>
#include <vector>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/batch/database.hpp"
#include "app/batch/sql.hpp"
#include "core/error.hpp"
#include "support/fixtures.hpp"

namespace guestfrag::test {

/// The value of the first column of the first row of `sql`, with `bound` as parameter 1.
inline std::int64_t db_integer(const std::string& db, const std::string& sql, const std::string& bound = {}) {
    const auto d = batch::open_database(db, false);
    batch::Statement s(*d, sql);
    if (!bound.empty()) s.bind(1, bound);
    REQUIRE(s.step());
    return s.integer(0);
}

/// Takes the columns and tables of the schemas after `version` off `db` (schema 7's plan IO,
/// schema 8's datastore, re-laid copy commands and run heartbeat, schema 9's verdicts, schema
/// 10's storage work), as a database of that older schema has them.
inline void drop_columns_after(batch::Connection& db, int version) {
    if (version < 9)
        db.exec("DROP TABLE verdicts");
    else if (version < 10)
        db.exec("ALTER TABLE verdicts DROP COLUMN work_seconds");
    if (version < 8) {
        for (const char* column : {"datastore", "copy_relaid_commands_4m", "copy_relaid_commands_16m"})
            db.exec(std::string("ALTER TABLE images DROP COLUMN ") + column);
        db.exec("ALTER TABLE runs DROP COLUMN heartbeat");
    }
    if (version < 7)
        for (const char* column :
             {"plan_ios", "plan_first_writes", "plan_seconds_hdd", "plan_seconds_ssd", "plan_seconds_array"})
            db.exec(std::string("ALTER TABLE plans DROP COLUMN ") + column);
}

/// Per path, the JSON line batch printed for it.
inline std::map<std::string, nlohmann::json> batch_json_lines(const std::string& out) {
    std::map<std::string, nlohmann::json> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        const nlohmann::json j = nlohmann::json::parse(line);
        lines[j["path"]] = j;
    }
    return lines;
}

/// The names of the files in `dir`.
inline std::set<std::string> files_in(const std::filesystem::path& dir) {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        names.insert(entry.path().filename().string());
    return names;
}

/// A scratch directory removed with everything in it when the test is done (the images are
/// copies, 160 MB per datastore).
struct Scratch {
    explicit Scratch(std::filesystem::path path) : dir(std::move(path)) {}
    std::filesystem::path dir;
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

/// A directory of four generated images (three volumes of different seeds and a GPT disk)
/// and one corrupt image (random bytes with a .img name).
inline std::filesystem::path make_datastore(const std::string& name) {
    const std::filesystem::path dir = test::scratch_dir() / (name + "." + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "sub");
    for (const std::uint32_t seed : {41u, 42u, 43u}) {
        MkImageOptions o;
        o.disk_size = 40ull << 20;
        o.files = 150;
        o.seed = seed;
        std::filesystem::copy_file(test::generated_image("batch-" + std::to_string(seed), o),
                      dir / (seed == 43 ? "sub/vm" + std::to_string(seed) + ".img" : "vm" + std::to_string(seed) + ".img"));
    }
    MkImageOptions gpt;
    gpt.disk_size = 40ull << 20;
    gpt.files = 150;
    gpt.seed = 44;
    gpt.table = "gpt";
    std::filesystem::copy_file(test::generated_image("batch-gpt", gpt), dir / "vm44.raw");
    std::ofstream bad(dir / "broken.img", std::ios::binary);
    for (std::uint32_t i = 0; i < 300000; ++i) bad.put(static_cast<char>((i * 7919u) % 251u));
    std::ofstream(dir / "notes.txt") << "not an image\n";
    return dir;
}

/// path → (status, error, fragmentation % of partition 1) from a results database.
inline std::map<std::string, std::tuple<std::string, std::string, double>> image_rows(const std::string& db) {
    const auto d = batch::open_database(db, false);
    batch::Statement s(*d,
                       "SELECT i.path, i.status, coalesce(i.error, ''), coalesce(m.fragmentation_percent, -1) "
                       "FROM images i LEFT JOIN volumes v ON v.image_id = i.image_id "
                       "LEFT JOIN metrics m ON m.volume_id = v.volume_id ORDER BY i.image_id");
    std::map<std::string, std::tuple<std::string, std::string, double>> rows;
    while (s.step()) rows[s.text(0)] = {s.text(1), s.text(2), s.real(3)};
    return rows;
}

/// `guestfrag ARGS...` started in the background (standard output discarded, standard error
/// into `err`); returns its pid.
inline pid_t spawn_cli(const std::vector<std::string>& args, const std::string& err = "/dev/null") {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::vector<char*> argv{const_cast<char*>(GUESTFRAG_CLI)};
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        // A child that cannot redirect its output exits 127 as one that cannot start.
        if (std::freopen("/dev/null", "w", stdout) && std::freopen(err.c_str(), "w", stderr))
            ::execv(GUESTFRAG_CLI, argv.data());
        ::_exit(127);
    }
    return pid;
}

/// Waits until the database at `db` holds at least `rows` image rows (the batch writing it
/// may not have created it yet); fails the test when the batch ends or 120 s pass first.
inline void wait_for_rows(const std::string& db, pid_t batch, std::int64_t rows) {
    for (int i = 0; i < 1200; ++i) {
        int status = 0;
        REQUIRE(::waitpid(batch, &status, WNOHANG) == 0);  // still running
        try {
            const auto d = batch::open_database(db, false);
            batch::Statement s(*d, "SELECT count(*) FROM images");
            if (s.step() && s.integer(0) >= rows) return;
        } catch (const Error&) {
            // Not created yet.
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("the batch stored fewer than " << rows << " images in 120 s");
}

inline int wait_exit(pid_t pid) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace guestfrag::test
