// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "app/batch/sql.hpp"

namespace guestfrag::batch {

/// Opens the results database `target`: a postgresql:// (or postgres://) URI in libpq's
/// form, or else the path of an SQLite file (created if `create`).
[[nodiscard]] std::unique_ptr<Connection> open_database(const std::string& target, bool create);

/// Whether `target` names a PostgreSQL database (a postgresql:// or postgres:// URI).
[[nodiscard]] bool is_postgres_uri(std::string_view target);

/// `target` as it may be printed: a URI's password replaced by "***".
[[nodiscard]] std::string database_name(std::string_view target);

}  // namespace guestfrag::batch
