// SPDX-License-Identifier: GPL-2.0-or-later
// A PostgreSQL server of the test's own: a new cluster in a temporary directory, reached only
// through a unix socket there (no TCP port), stopped and removed when the test ends.
#pragma once

#include <string>
#include <vector>

namespace guestfrag::test {

class PostgresServer {
public:
    /// Runs initdb and starts the server (as the `postgres` user when the tests run as
    /// root: the server refuses root). The superuser `guestfrag` connects without a password;
    /// every other role must give its password (scram-sha-256). Throws std::runtime_error
    /// when the server's programs are missing (package postgresql) or it does not start.
    PostgresServer();
    ~PostgresServer();
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    /// postgresql:// URI of database `database` as `user` (with `password` when given).
    [[nodiscard]] std::string uri(const std::string& database = "postgres",
                                  const std::string& user = "guestfrag",
                                  const std::string& password = "") const;
    /// Runs SQL as the superuser; throws std::runtime_error with the server's message.
    void sql(const std::string& statements, const std::string& database = "postgres") const;
    /// Stops the server at once (clients see their connection end), or starts it again.
    void stop() const;
    void start() const;
    [[nodiscard]] const std::string& directory() const { return dir_; }

private:
    [[nodiscard]] int run_as_owner(const std::string& program, const std::vector<std::string>& args,
                                   std::string* err = nullptr) const;
    std::string bin_;  ///< the server's program directory
    std::string dir_;  ///< data/, the socket and log
    bool as_postgres_ = false;
};

}  // namespace guestfrag::test
