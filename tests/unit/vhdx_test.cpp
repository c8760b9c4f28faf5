// SPDX-License-Identifier: GPL-2.0-or-later
#include <catch2/catch.hpp>

#include "core/image/vhdx_format.hpp"

TEST_CASE("vhdx crc32c") { CHECK(guestfrag::vhdx::crc32c(std::as_bytes(std::span("123456789", 9))) == 0xE3069283u); }
