// SPDX-License-Identifier: GPL-2.0-or-later
// What the batch tests read back: rows of the results database, the JSON lines `batch
// --json` printed, and the files a batch left in its output directory.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/batch/sqlite.hpp"

namespace guestfrag::test {

/// The value of the first column of the first row of `sql`, with `bound` as parameter 1.
inline std::int64_t db_integer(const std::filesystem::path& db, const std::string& sql,
                               const std::string& bound = {}) {
    batch::Database d(db.string(), false);
    batch::Statement s(d, sql);
    if (!bound.empty()) s.bind(1, bound);
    REQUIRE(s.step());
    return s.integer(0);
}

/// Takes schema 7's columns off `db`'s plans (the plan's own IO), as a database of an older
/// schema has them.
inline void drop_plan_io_columns(batch::Database& db) {
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

}  // namespace guestfrag::test
