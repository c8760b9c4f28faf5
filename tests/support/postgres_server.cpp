// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/postgres_server.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "app/batch/postgres.hpp"
#include "support/fixtures.hpp"

namespace fs = std::filesystem;

namespace guestfrag::test {

namespace {

/// The newest installed server's program directory (Debian keeps them off PATH).
std::string server_programs() {
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& version : fs::directory_iterator("/usr/lib/postgresql", ec))
        if (fs::exists(version.path() / "bin" / "pg_ctl")) found.push_back(version.path() / "bin");
    if (found.empty())
        throw std::runtime_error(
            "no PostgreSQL server in /usr/lib/postgresql/*/bin (install package postgresql)");
    std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
        return std::stoi(a.parent_path().filename().string()) <
               std::stoi(b.parent_path().filename().string());
    });
    return found.back().string();
}

}  // namespace

PostgresServer::PostgresServer() : bin_(server_programs()) {
    // In /tmp rather than the build tree: the server's user must be able to reach it.
    char pattern[] = "/tmp/guestfrag-pg.XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("cannot create a directory for PostgreSQL");
    dir_ = pattern;
    as_postgres_ = ::geteuid() == 0;
    if (as_postgres_) {
        const passwd* pw = ::getpwnam("postgres");
        if (!pw)
            throw std::runtime_error("the tests run as root but there is no user postgres to run the server");
        if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
            throw std::runtime_error("cannot give " + dir_ + " to postgres");
    }
    std::string err;
    if (run_as_owner(
            "initdb",
            {"-D", dir_ + "/data", "-U", "guestfrag", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"},
            &err) != 0)
        throw std::runtime_error("initdb failed: " + err);
    // The superuser without a password; any other role with one.
    if (run_as_owner("sh", {"-c", "printf 'local all guestfrag trust\\nlocal all all scram-sha-256\\n' > " +
                                      dir_ + "/data/pg_hba.conf"}) != 0)
        throw std::runtime_error("cannot write pg_hba.conf");
    start();
}

PostgresServer::~PostgresServer() {
    // Already stopped when the test stopped it and failed before starting it again.
    static_cast<void>(run_as_owner("pg_ctl", {"-D", dir_ + "/data", "-m", "immediate", "-w", "stop"}));
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

int PostgresServer::run_as_owner(const std::string& program, const std::vector<std::string>& args,
                                 std::string* err) const {
    std::vector<std::string> argv;
    if (as_postgres_) argv = {"runuser", "-u", "postgres", "--"};
    argv.push_back(program == "sh" ? "sh" : bin_ + "/" + program);
    argv.insert(argv.end(), args.begin(), args.end());
    const CommandResult r = run(argv);
    if (err) *err = r.out + r.err;
    return r.status;
}

void PostgresServer::start() const {
    std::string err;
    // No TCP at all: the socket in the directory is the only way in. fsync off: a test's
    // cluster never outlives a crash.
    if (run_as_owner("pg_ctl",
                     {"-D", dir_ + "/data", "-l", dir_ + "/log", "-w", "-t", "60", "-o",
                      "-k " + dir_ + " -c listen_addresses= -c fsync=off", "start"},
                     &err) != 0) {
        const std::string text = file_contents(dir_ + "/log");
        throw std::runtime_error("PostgreSQL did not start: " + err + text);
    }
}

void PostgresServer::stop() const {
    std::string err;
    if (run_as_owner("pg_ctl", {"-D", dir_ + "/data", "-m", "immediate", "-w", "stop"}, &err) != 0)
        throw std::runtime_error("PostgreSQL did not stop: " + err);
}

std::string PostgresServer::uri(const std::string& database, const std::string& user,
                                const std::string& password) const {
    return "postgresql://" + user + (password.empty() ? "" : ":" + password) + "@/" + database +
           "?host=" + dir_;
}

void PostgresServer::sql(const std::string& statements, const std::string& database) const {
    try {
        batch::PostgresConnection(uri(database)).exec(statements);
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("PostgreSQL: ") + e.what());
    }
}

}  // namespace guestfrag::test
