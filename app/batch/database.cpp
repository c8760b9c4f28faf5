// SPDX-License-Identifier: GPL-2.0-or-later
// Which engine a --db names, and its connection: SQLite here, PostgreSQL from its module.
#include "app/batch/database.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "app/batch/sqlite.hpp"
#include "core/error.hpp"

namespace guestfrag::batch {

namespace {

/// guestfrag-postgresql's module (app/batch/postgres_module.cpp): installed at
/// GUESTFRAG_MODULE_RELDIR from the program's own directory, in the build tree as installed;
/// GUESTFRAG_MODULE_DIR names another directory (the test executables, which are not beside
/// it).
std::filesystem::path postgres_module() {
    if (const char* dir = secure_getenv("GUESTFRAG_MODULE_DIR"); dir && *dir)
        return std::filesystem::path(dir) / "postgresql.so";
    std::error_code error;
    const auto program = std::filesystem::read_symlink("/proc/self/exe", error);
    return program.parent_path() / GUESTFRAG_MODULE_RELDIR / "postgresql.so";
}

using Connect = Connection* (*)(const char* uri);

/// Loads the module on the first PostgreSQL URI. It stays loaded until the program ends: the
/// code of every connection it made lives in it.
Connect postgres_connect() {
    static const Connect connect = [] {
        const auto path = postgres_module();
        void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!module)
            throw Error(
                ErrorKind::Unsupported,
                std::string("a postgresql:// database needs the guestfrag-postgresql package: ") + dlerror());
        const auto* version = static_cast<const char*>(dlsym(module, "guestfrag_postgresql_version"));
        auto* entry = reinterpret_cast<Connect>(dlsym(module, "guestfrag_postgresql_connect"));
        if (!version || !entry || std::strcmp(version, GUESTFRAG_VERSION) != 0)
            throw Error(ErrorKind::Unsupported, path.string() +
                                                    " is not guestfrag-postgresql " GUESTFRAG_VERSION
                                                    ", the version of this guestfrag");
        return entry;
    }();
    return connect;
}

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
    if (is_postgres_uri(target)) return std::unique_ptr<Connection>(postgres_connect()(target.c_str()));
    // libpq's key=value form would otherwise be taken for a file name and created.
    if (target.find('=') != std::string::npos && target.find(' ') != std::string::npos)
        throw Error(ErrorKind::Unsupported, "not a PostgreSQL URI (postgresql://…) nor a database file name");
    return std::make_unique<Database>(target, create);
}

}  // namespace guestfrag::batch
