// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/sql.hpp"

#include <cstdlib>

#include "app/batch/postgres.hpp"
#include "app/batch/sqlite.hpp"
#include "core/error.hpp"

namespace guestfrag::batch {

namespace {

// Text read as a number converts as SQLite converts it, leading digits or 0 (a damaged file's
// text where a number belongs must not end the command with an uncaught exception).
template <class... F>
struct Visitor : F... {
    using F::operator()...;
};
template <class... F>
Visitor(F...) -> Visitor<F...>;  // clang 14 deduces no aggregate's arguments without it

}  // namespace

bool is_postgres_uri(std::string_view target) {
    return target.starts_with("postgresql://") || target.starts_with("postgres://");
}

std::string database_name(std::string_view target) {
    std::string name(target);
    if (!is_postgres_uri(target)) return name;
    // postgresql://user:secret@host/db and ?password=secret (libpq's URI forms).
    const std::size_t authority = name.find("://") + 3;
    const std::size_t at = name.find('@', authority);
    const std::size_t end_of_authority = name.find_first_of("/?", authority);
    if (at != std::string::npos && at < end_of_authority) {
        const std::size_t colon = name.find(':', authority);
        if (colon != std::string::npos && colon < at) name.replace(colon + 1, at - colon - 1, "***");
    }
    for (std::size_t at_key = name.find('?'); at_key != std::string::npos;
         at_key = name.find('&', at_key + 1)) {
        if (name.compare(at_key + 1, 9, "password=") != 0) continue;
        const std::size_t value = at_key + 10;
        const std::size_t end = name.find('&', value);
        name.replace(value, end == std::string::npos ? std::string::npos : end - value, "***");
    }
    return name;
}

std::unique_ptr<Connection> open_database(const std::string& target, bool create) {
    if (is_postgres_uri(target)) return std::make_unique<PostgresConnection>(target);
    // libpq's key=value form would otherwise be taken for a file name and created.
    if (target.find('=') != std::string::npos && target.find(' ') != std::string::npos)
        throw Error(ErrorKind::Unsupported, "not a PostgreSQL URI (postgresql://…) nor a database file name");
    return std::make_unique<Database>(target, create);
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

std::int64_t Statement::insert() {
    if (!step()) throw Error(ErrorKind::Io, "INSERT … RETURNING returned no row");
    const std::int64_t id = integer(0);
    reset();
    return id;
}

std::int64_t Statement::integer(int column) const {
    return std::visit(
        Visitor{[](std::monostate) { return std::int64_t{0}; }, [](std::int64_t v) { return v; },
                [](double v) { return static_cast<std::int64_t>(v); },
                [](const std::string& v) {
                    return static_cast<std::int64_t>(std::strtoll(v.c_str(), nullptr, 10));
                }},
        value(column));
}

double Statement::real(int column) const {
    return std::visit(
        Visitor{[](std::monostate) { return 0.0; }, [](std::int64_t v) { return static_cast<double>(v); },
                [](double v) { return v; },
                [](const std::string& v) { return std::strtod(v.c_str(), nullptr); }},
        value(column));
}

std::string Statement::text(int column) const {
    return std::visit(
        Visitor{[](std::monostate) { return std::string(); },
                [](std::int64_t v) { return std::to_string(v); }, [](double v) { return std::to_string(v); },
                [](const std::string& v) { return v; }},
        value(column));
}

bool Statement::is_null(int column) const { return std::holds_alternative<std::monostate>(value(column)); }

}  // namespace guestfrag::batch
