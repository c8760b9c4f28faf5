// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/sqlite.hpp"

#include <sqlite3.h>

#include "core/error.hpp"

namespace guestfrag::batch {

namespace {

class SqliteCursor final : public Cursor {
public:
    SqliteCursor(const Database& db, sqlite3* handle, std::string_view sql) : db_(db) {
        sqlite3_stmt* raw = nullptr;
        const int rc = sqlite3_prepare_v2(handle, sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
        stmt_.reset(raw);
        db_.check(rc);
    }

    void bind(int index, const SqlValue& value) override {
        sqlite3_stmt* s = stmt_.get();
        if (const auto* i = std::get_if<std::int64_t>(&value))
            db_.check(sqlite3_bind_int64(s, index, *i));
        else if (const auto* d = std::get_if<double>(&value))
            db_.check(sqlite3_bind_double(s, index, *d));
        else if (const auto* t = std::get_if<std::string>(&value))
            db_.check(sqlite3_bind_text(s, index, t->data(), static_cast<int>(t->size()), SQLITE_TRANSIENT));
        else
            db_.check(sqlite3_bind_null(s, index));
    }

    bool step() override {
        const int rc = sqlite3_step(stmt_.get());
        db_.check(rc);
        return rc == SQLITE_ROW;
    }

    void reset() override {
        sqlite3_reset(stmt_.get());
        sqlite3_clear_bindings(stmt_.get());
    }

    [[nodiscard]] SqlValue value(int column) const override {
        sqlite3_stmt* s = stmt_.get();
        switch (sqlite3_column_type(s, column)) {
            case SQLITE_INTEGER:
                return std::int64_t{sqlite3_column_int64(s, column)};
            case SQLITE_FLOAT:
                return sqlite3_column_double(s, column);
            case SQLITE_NULL:
                return std::monostate{};
            default: {
                const auto* p = sqlite3_column_text(s, column);
                return p ? std::string(reinterpret_cast<const char*>(p),
                                       static_cast<std::size_t>(sqlite3_column_bytes(s, column)))
                         : std::string();
            }
        }
    }

    [[nodiscard]] int columns() const override { return sqlite3_column_count(stmt_.get()); }
    [[nodiscard]] std::string column_name(int column) const override {
        return sqlite3_column_name(stmt_.get(), column);
    }

private:
    struct Finalize {
        void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
    };
    const Database& db_;
    std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
};

}  // namespace

void Database::Close::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }

Database::Database(const std::string& path, bool create) {
    sqlite3* raw = nullptr;
    const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    db_.reset(raw);  // sqlite3_open_v2 may hand out a handle even when it fails
    // Messages leave the path out, as every core error does: the caller names the file.
    if (rc != SQLITE_OK)
        throw Error(rc == SQLITE_CANTOPEN ? ErrorKind::NotFound : ErrorKind::Io,
                    raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(raw, 10000);
    exec("PRAGMA foreign_keys = ON");
}

void Database::check(int rc) const {
    if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return;
    const ErrorKind kind = rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? ErrorKind::Corrupt : ErrorKind::Io;
    throw Error(kind, sqlite3_errmsg(db_.get()));
}

void Database::exec(std::string_view sql) {
    check(sqlite3_exec(db_.get(), std::string(sql).c_str(), nullptr, nullptr, nullptr));
}

std::unique_ptr<Cursor> Database::prepare(std::string_view sql) {
    return std::make_unique<SqliteCursor>(*this, db_.get(), sql);
}

void Database::rollback() noexcept { sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr); }

std::int64_t Database::schema_version() {
    Statement s(*this, "PRAGMA user_version");
    return s.step() ? s.integer(0) : 0;
}

void Database::set_schema_version(int version) { exec("PRAGMA user_version = " + std::to_string(version)); }

std::int64_t Database::tables() {
    Statement s(*this, "SELECT count(*) FROM sqlite_master");
    return s.step() ? s.integer(0) : 0;
}

}  // namespace guestfrag::batch
