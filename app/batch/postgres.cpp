// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/postgres.hpp"

#include <libpq-fe.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/error.hpp"

namespace guestfrag::batch {

namespace {

// Type OIDs of pg_type (stable across PostgreSQL versions).
constexpr Oid kInt8 = 20, kInt2 = 21, kInt4 = 23, kFloat4 = 700, kFloat8 = 701, kNumeric = 1700;

/// libpq's messages end in a newline and may continue on indented lines ("Is the server
/// running…"): one line, as every guestfrag error is.
std::string one_line(const char* message) {
    std::string out;
    for (const char* p = message; p && *p; ++p) {
        if (*p == '\n' || *p == '\t') {
            if (!out.empty() && out.back() != ' ') out += ' ';
        } else {
            out += *p;
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out.empty() ? "PostgreSQL: unknown error" : out;
}

struct ClearResult {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ClearResult>;

/// The result of a command; throws with its message unless it succeeded.
Result checked(const PostgresConnection& db, PGresult* raw) {
    Result result(raw);
    const ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    throw Error(ErrorKind::Io, result && *PQresultErrorMessage(result.get())
                                   ? one_line(PQresultErrorMessage(result.get()))
                                   : db.error_message());
}

/// `?` parameters as PostgreSQL's $1, $2, … (outside quoted literals).
std::string numbered_parameters(std::string_view sql) {
    std::string out;
    int next = 0;
    bool quoted = false;
    for (const char c : sql) {
        if (c == '\'') quoted = !quoted;
        if (c == '?' && !quoted) {
            out += '$';
            out += std::to_string(++next);
        } else {
            out += c;
        }
    }
    return out;
}

bool word_at(std::string_view text, std::size_t at, std::string_view word) {
    const auto part_of_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    return text.substr(at, word.size()) == word && (at == 0 || !part_of_word(text[at - 1])) &&
           (at + word.size() == text.size() || !part_of_word(text[at + word.size()]));
}

class PostgresCursor final : public Cursor {
public:
    PostgresCursor(const PostgresConnection& db, std::string_view sql)
        : db_(db), sql_(numbered_parameters(sql)) {}

    void bind(int index, const SqlValue& value) override {
        if (index < 1) throw Error(ErrorKind::Io, "parameter index out of range");
        if (params_.size() < static_cast<std::size_t>(index)) params_.resize(static_cast<std::size_t>(index));
        std::optional<std::string>& param = params_[static_cast<std::size_t>(index) - 1];
        if (const auto* i = std::get_if<std::int64_t>(&value)) {
            param = std::to_string(*i);
        } else if (const auto* d = std::get_if<double>(&value)) {
            // The shortest text that reads back as the same double.
            std::array<char, 32> text{};
            const auto end = std::to_chars(text.data(), text.data() + text.size(), *d).ptr;
            param = std::string(text.data(), end);
        } else if (const auto* t = std::get_if<std::string>(&value)) {
            param = *t;
        } else {
            param.reset();
        }
    }

    bool step() override {
        if (!result_) {
            std::vector<const char*> values;
            for (const auto& p : params_) values.push_back(p ? p->c_str() : nullptr);
            result_ = checked(db_, PQexecParams(db_.handle(), sql_.c_str(), static_cast<int>(values.size()),
                                                nullptr, values.data(), nullptr, nullptr, 0));
            row_ = -1;
        }
        return ++row_ < PQntuples(result_.get());
    }

    void reset() override {
        result_.reset();
        params_.clear();
    }

    [[nodiscard]] SqlValue value(int column) const override {
        PGresult* r = result_.get();
        if (!r || row_ < 0 || row_ >= PQntuples(r) || column < 0 || column >= PQnfields(r) ||
            PQgetisnull(r, row_, column))
            return std::monostate{};
        const char* text = PQgetvalue(r, row_, column);
        switch (PQftype(r, column)) {
            case kInt2:
            case kInt4:
            case kInt8:
                return static_cast<std::int64_t>(std::strtoll(text, nullptr, 10));
            case kFloat4:
            case kFloat8:
            case kNumeric:
                return std::strtod(text, nullptr);
            default:
                return std::string(text, static_cast<std::size_t>(PQgetlength(r, row_, column)));
        }
    }

    [[nodiscard]] int columns() const override { return result_ ? PQnfields(result_.get()) : 0; }
    [[nodiscard]] std::string column_name(int column) const override {
        const char* name = result_ ? PQfname(result_.get(), column) : nullptr;
        return name ? name : "";
    }

private:
    const PostgresConnection& db_;
    std::string sql_;
    std::vector<std::optional<std::string>> params_;
    Result result_;
    int row_ = -1;
};

}  // namespace

void PostgresConnection::Finish::operator()(pg_conn* conn) const noexcept { PQfinish(conn); }

PostgresConnection::PostgresConnection(const std::string& uri) {
    // The URI is expanded after the defaults, so what it names wins over them.
    const char* const keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* const values[] = {"10", "guestfrag", uri.c_str(), nullptr};
    conn_.reset(PQconnectdbParams(keys, values, 1));
    if (!conn_) throw Error(ErrorKind::Io, "PostgreSQL: out of memory");
    if (PQstatus(conn_.get()) != CONNECTION_OK) throw Error(ErrorKind::Io, error_message());
    // Notices ("relation … already exists, skipping") are not errors and must not reach stderr.
    PQsetNoticeProcessor(
        conn_.get(), [](void*, const char*) {}, nullptr);
    // JIT compilation (PostgreSQL 11 on) costs more than it saves on every query here: on
    // `fleet` over 100,000 images it took 0.9 s of 1.6.
    if (PQserverVersion(conn_.get()) >= 110000) exec("SET jit = off");
}

std::string PostgresConnection::error_message() const { return one_line(PQerrorMessage(conn_.get())); }

void PostgresConnection::exec(std::string_view sql) {
    (void)checked(*this, PQexec(handle(), std::string(sql).c_str()));
}

void PostgresConnection::exec_ddl(std::string_view sql) { exec(postgres_ddl(sql)); }

std::unique_ptr<Cursor> PostgresConnection::prepare(std::string_view sql) {
    return std::make_unique<PostgresCursor>(*this, sql);
}

void PostgresConnection::rollback() noexcept { PQclear(PQexec(handle(), "ROLLBACK")); }

void PostgresConnection::lock_schema() {
    // One key for every guestfrag database on the server; held until the transaction ends.
    exec("SELECT pg_advisory_xact_lock(1735747954)");
}

std::int64_t PostgresConnection::schema_version() {
    Statement table(*this,
                    "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
                    "AND tablename = 'guestfrag_schema'");
    if (!table.step() || table.integer(0) == 0) return 0;
    Statement version(*this, "SELECT max(version) FROM guestfrag_schema");
    return version.step() ? version.integer(0) : 0;
}

void PostgresConnection::set_schema_version(int version) {
    exec(
        "CREATE TABLE IF NOT EXISTS guestfrag_schema (version INTEGER NOT NULL); DELETE FROM "
        "guestfrag_schema; "
        "INSERT INTO guestfrag_schema VALUES (" +
        std::to_string(version) + ")");
}

std::int64_t PostgresConnection::tables() {
    Statement s(*this, "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()");
    return s.step() ? s.integer(0) : 0;
}

std::string PostgresConnection::lock_rows(std::string_view alias) const {
    return " FOR UPDATE OF " + std::string(alias) + " SKIP LOCKED";
}

std::string postgres_ddl(std::string_view ddl) {
    struct Word {
        std::string_view sqlite, postgres;
    };
    // The row ids the database assigns are SQLite's `INTEGER PRIMARY KEY` with nothing after
    // it; PostgreSQL's INTEGER is 32 bits and its REAL 4 bytes.
    constexpr Word kWords[] = {
        {"INTEGER PRIMARY KEY,", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"},
        {"INTEGER", "BIGINT"},
        {"REAL", "DOUBLE PRECISION"}};
    std::string out;
    for (std::size_t at = 0; at < ddl.size();) {
        const Word* hit = nullptr;
        for (const Word& w : kWords)
            if (word_at(ddl, at, w.sqlite)) {
                hit = &w;
                break;
            }
        if (hit) {
            out += hit->postgres;
            at += hit->sqlite.size();
        } else {
            out += ddl[at++];
        }
    }
    return out;
}

}  // namespace guestfrag::batch
