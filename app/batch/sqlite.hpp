// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace guestfrag::batch {

/// One SQLite connection, owned (closed on destruction). Every failure throws Error(Io)
/// (Corrupt for a damaged or foreign file, NotFound for a missing one) with SQLite's
/// message; like every core error it leaves the path out, which the caller names. Not for concurrent use: callers that
/// share one serialise access themselves.
class Database {
public:
    /// Opens (creating if `create`) the database file at `path`, with foreign keys on and a
    /// busy timeout so that a concurrent reader never makes a write fail at once.
    Database(const std::string& path, bool create);

    void exec(std::string_view sql);
    [[nodiscard]] std::int64_t last_insert_id() const;
    [[nodiscard]] sqlite3* handle() const { return db_.get(); }
    /// Throws for SQLite status `rc` (not OK/ROW/DONE).
    void check(int rc) const;

private:
    struct Close {
        void operator()(sqlite3* db) const noexcept;
    };
    std::unique_ptr<sqlite3, Close> db_;
};

/// A prepared statement, finalised on destruction. bind() indexes start at 1.
class Statement {
public:
    Statement(const Database& db, std::string_view sql);

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, std::uint64_t value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view value);
    Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
    Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
    Statement& bind_null(int index);
    template <class T>
    Statement& bind(int index, const std::optional<T>& value) {
        return value ? bind(index, *value) : bind_null(index);
    }

    /// Advances to the next row; false when there is none. Throws on error.
    bool step();
    /// Runs a statement that returns no rows, then resets it for the next bind/run.
    void run();
    void reset();

    [[nodiscard]] std::int64_t integer(int column) const;
    [[nodiscard]] double real(int column) const;
    [[nodiscard]] std::string text(int column) const;
    [[nodiscard]] bool is_null(int column) const;

private:
    struct Finalize {
        void operator()(sqlite3_stmt* s) const noexcept;
    };
    const Database& db_;
    std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
};

/// BEGIN IMMEDIATE ... COMMIT; rolled back when destroyed without commit() (an exception
/// or an interrupt leaves the database as it was before the transaction).
class Transaction {
public:
    explicit Transaction(Database& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Database& db_;
    bool done_ = false;
};

}  // namespace guestfrag::batch
