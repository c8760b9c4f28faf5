// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/sqlite.hpp"

#include <sqlite3.h>

#include "core/error.hpp"

namespace guestfrag::batch {

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

std::int64_t Database::last_insert_id() const { return sqlite3_last_insert_rowid(db_.get()); }

void Statement::Finalize::operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }

Statement::Statement(const Database& db, std::string_view sql) : db_(db) {
    sqlite3_stmt* raw = nullptr;
    const int rc = sqlite3_prepare_v2(db.handle(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
    stmt_.reset(raw);
    db_.check(rc);
}

Statement& Statement::bind(int index, std::int64_t value) {
    db_.check(sqlite3_bind_int64(stmt_.get(), index, value));
    return *this;
}

Statement& Statement::bind(int index, double value) {
    db_.check(sqlite3_bind_double(stmt_.get(), index, value));
    return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
    db_.check(sqlite3_bind_text(stmt_.get(), index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT));
    return *this;
}

Statement& Statement::bind_null(int index) {
    db_.check(sqlite3_bind_null(stmt_.get(), index));
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(stmt_.get());
    db_.check(rc);
    return rc == SQLITE_ROW;
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(stmt_.get());
    sqlite3_clear_bindings(stmt_.get());
}

std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_.get(), column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_.get(), column); }
bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL; }

std::string Statement::text(int column) const {
    const auto* p = sqlite3_column_text(stmt_.get(), column);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), column)))
             : std::string();
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
    if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    db_.exec("COMMIT");
    done_ = true;
}

}  // namespace guestfrag::batch
