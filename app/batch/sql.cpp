// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/batch/sql.hpp"

#include <cstdlib>

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
