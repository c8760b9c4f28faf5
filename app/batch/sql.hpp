// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace guestfrag::batch {

/// One parameter or column value: NULL, an integer, a real or a text.
using SqlValue = std::variant<std::monostate, std::int64_t, double, std::string>;

/// An engine's prepared statement. Parameters are written `?` and numbered from 1; columns
/// from 0.
class Cursor {
public:
    virtual ~Cursor() = default;
    virtual void bind(int index, const SqlValue& value) = 0;
    /// Runs the statement on the first call, then advances to the next row; false when there
    /// is none. Throws on error.
    virtual bool step() = 0;
    /// Ready to run again; the bindings are cleared.
    virtual void reset() = 0;
    [[nodiscard]] virtual SqlValue value(int column) const = 0;
    [[nodiscard]] virtual int columns() const = 0;
    [[nodiscard]] virtual std::string column_name(int column) const = 0;
};

/// One connection to a results database: SQLite (a file) or PostgreSQL (a server). The SQL
/// the results database runs is written once for both; what differs between the engines is
/// here. Failures throw Error (Io, NotFound, Corrupt) with the engine's message on one line,
/// without the database's name, which the caller gives. Not for concurrent use.
class Connection {
public:
    virtual ~Connection() = default;
    [[nodiscard]] virtual bool postgres() const = 0;
    /// Runs statements without parameters (several, separated by ';').
    virtual void exec(std::string_view sql) = 0;
    /// Runs table definitions written in SQLite's types: INTEGER, REAL, and `INTEGER PRIMARY
    /// KEY,` for a row id the database assigns. PostgreSQL's are BIGINT, DOUBLE PRECISION
    /// and an identity column.
    virtual void exec_ddl(std::string_view sql) { exec(sql); }
    [[nodiscard]] virtual std::unique_ptr<Cursor> prepare(std::string_view sql) = 0;

    /// Starts a transaction that holds the write lock from its start (SQLite's BEGIN
    /// IMMEDIATE), so two writers deciding on the same row are serialised.
    virtual void begin() = 0;
    virtual void rollback() noexcept = 0;
    /// Within a transaction: waits until no other connection is creating or upgrading the
    /// schema (PostgreSQL; an SQLite transaction already excludes other writers).
    virtual void lock_schema() {}
    /// The schema version stored in the database; 0 when none is.
    [[nodiscard]] virtual std::int64_t schema_version() = 0;
    virtual void set_schema_version(int version) = 0;
    /// Tables in the database (its current schema for PostgreSQL).
    [[nodiscard]] virtual std::int64_t tables() = 0;
    /// What ends a SELECT to lock the rows it returns of table alias `alias`, skipping rows
    /// another transaction holds; empty where the transaction already excludes others.
    [[nodiscard]] virtual std::string lock_rows(std::string_view alias) const {
        (void)alias;
        return {};
    }
};

/// A prepared statement with typed binding; bind() indexes start at 1.
class Statement {
public:
    Statement(Connection& db, std::string_view sql) : cursor_(db.prepare(sql)) {}

    Statement& bind(int index, std::int64_t value) { return bind_value(index, value); }
    Statement& bind(int index, std::uint64_t value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, double value) { return bind_value(index, value); }
    Statement& bind(int index, std::string_view value) { return bind_value(index, std::string(value)); }
    Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
    Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
    Statement& bind_null(int index) { return bind_value(index, std::monostate{}); }
    template <class T>
    Statement& bind(int index, const std::optional<T>& value) {
        return value ? bind(index, *value) : bind_null(index);
    }
    Statement& bind_value(int index, const SqlValue& value) {
        cursor_->bind(index, value);
        return *this;
    }

    /// Advances to the next row; false when there is none. Throws on error.
    bool step() { return cursor_->step(); }
    /// Runs a statement that returns no rows, then resets it for the next bind/run.
    void run();
    /// Runs an INSERT … RETURNING of one id column and returns that id; then resets.
    std::int64_t insert();
    void reset() { cursor_->reset(); }

    [[nodiscard]] std::int64_t integer(int column) const;
    [[nodiscard]] double real(int column) const;
    [[nodiscard]] std::string text(int column) const;
    [[nodiscard]] bool is_null(int column) const;
    [[nodiscard]] SqlValue value(int column) const { return cursor_->value(column); }
    [[nodiscard]] int columns() const { return cursor_->columns(); }
    [[nodiscard]] std::string column_name(int column) const { return cursor_->column_name(column); }

private:
    std::unique_ptr<Cursor> cursor_;
};

/// A transaction (Connection::begin); rolled back when destroyed without commit() (an
/// exception or an interrupt leaves the database as it was before the transaction).
class Transaction {
public:
    explicit Transaction(Connection& db) : db_(db) { db_.begin(); }
    ~Transaction() {
        if (!done_) db_.rollback();
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit() {
        db_.exec("COMMIT");
        done_ = true;
    }

private:
    Connection& db_;
    bool done_ = false;
};

}  // namespace guestfrag::batch
