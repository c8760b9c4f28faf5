// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "app/batch/sql.hpp"

struct pg_conn;

namespace guestfrag::batch {

/// One PostgreSQL connection (libpq), owned. `uri` is libpq's postgresql:// form, TLS and
/// every other libpq parameter included; a connect timeout of 10 s applies unless it names
/// one. Failures throw Error(Io) with the server's or libpq's message folded onto one line.
class PostgresConnection final : public Connection {
public:
    explicit PostgresConnection(const std::string& uri);

    [[nodiscard]] bool postgres() const override { return true; }
    void exec(std::string_view sql) override;
    void exec_ddl(std::string_view sql) override;
    [[nodiscard]] std::unique_ptr<Cursor> prepare(std::string_view sql) override;
    void begin() override { exec("BEGIN"); }
    void rollback() noexcept override;
    void lock_schema() override;
    [[nodiscard]] std::int64_t schema_version() override;
    void set_schema_version(int version) override;
    [[nodiscard]] std::int64_t tables() override;
    [[nodiscard]] std::string lock_rows(std::string_view alias) const override;

    [[nodiscard]] pg_conn* handle() const { return conn_.get(); }
    /// libpq's last error on one line.
    [[nodiscard]] std::string error_message() const;

private:
    struct Finish {
        void operator()(pg_conn* conn) const noexcept;
    };
    std::unique_ptr<pg_conn, Finish> conn_;
};

/// SQLite's table definitions in PostgreSQL's types (Connection::exec_ddl).
[[nodiscard]] std::string postgres_ddl(std::string_view sqlite_ddl);

}  // namespace guestfrag::batch
