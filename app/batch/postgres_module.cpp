// SPDX-License-Identifier: GPL-2.0-or-later
// The PostgreSQL results database as a module of its own (postgresql.so, package
// guestfrag-postgresql), loaded by open_database() when --db names a postgresql:// URI: the
// guestfrag package then needs no libpq, which only a fleet writing into one server wants
// (docs/batch.md, "PostgreSQL").
#include "app/batch/postgres.hpp"

extern "C" {

/// The guestfrag version this module was built with: Connection's layout is that version's,
/// so a program loads only its own version's module.
[[gnu::visibility("default")]] extern const char guestfrag_postgresql_version[];
const char guestfrag_postgresql_version[] = GUESTFRAG_VERSION;

/// A new connection to `uri`, owned by the caller; throws guestfrag::Error as
/// PostgresConnection does.
[[gnu::visibility("default")]] guestfrag::batch::Connection* guestfrag_postgresql_connect(const char* uri) {
    return new guestfrag::batch::PostgresConnection(uri);
}
}
