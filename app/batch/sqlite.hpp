// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "app/batch/sql.hpp"

struct sqlite3;

namespace guestfrag::batch {

/// One SQLite connection, owned (closed on destruction). Every failure throws Error(Io)
/// (Corrupt for a damaged or foreign file, NotFound for a missing one) with SQLite's
/// message; like every core error it leaves the path out, which the caller names.
class Database final : public Connection {
public:
    /// Opens (creating if `create`) the database file at `path`, with foreign keys on and a
    /// busy timeout so that a concurrent reader never makes a write fail at once.
    Database(const std::string& path, bool create);

    [[nodiscard]] bool postgres() const override { return false; }
    void exec(std::string_view sql) override;
    [[nodiscard]] std::unique_ptr<Cursor> prepare(std::string_view sql) override;
    void begin() override { exec("BEGIN IMMEDIATE"); }
    void rollback() noexcept override;
    [[nodiscard]] std::int64_t schema_version() override;
    void set_schema_version(int version) override;
    [[nodiscard]] std::int64_t tables() override;

    /// Throws for SQLite status `rc` (not OK/ROW/DONE).
    void check(int rc) const;

private:
    struct Close {
        void operator()(sqlite3* db) const noexcept;
    };
    std::unique_ptr<sqlite3, Close> db_;
};

}  // namespace guestfrag::batch
