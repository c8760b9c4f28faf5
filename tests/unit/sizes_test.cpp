// SPDX-License-Identifier: GPL-2.0-or-later
#include <catch2/catch.hpp>

#include "pipeline/sizes.hpp"

using guestfrag::format_size;
using guestfrag::parse_size;

TEST_CASE("sizes parse in the forms docs/design.md §6 names", "[cli][sizes]") {
    CHECK(parse_size("4096") == 4096u);
    CHECK(parse_size("64K") == 65536u);
    CHECK(parse_size("64KiB") == 65536u);
    CHECK(parse_size("1MiB") == 1048576u);
    CHECK(parse_size("2G") == 2147483648u);
    CHECK(parse_size("1.5KiB") == 1536u);
    CHECK(parse_size("20MB") == 20971520u);
}

TEST_CASE("malformed or overflowing sizes are refused", "[cli][sizes]") {
    CHECK_FALSE(parse_size(""));
    CHECK_FALSE(parse_size("K"));
    CHECK_FALSE(parse_size("-1"));
    CHECK_FALSE(parse_size("12Q"));
    CHECK_FALSE(parse_size("0.3"));
    CHECK_FALSE(parse_size("16E"));
    CHECK_FALSE(parse_size("99999999999999999999"));
}

TEST_CASE("sizes print with binary units", "[cli][sizes]") {
    CHECK(format_size(512) == "512 B");
    CHECK(format_size(4096) == "4.00 KiB");
    CHECK(format_size(1536ull << 20) == "1.50 GiB");
    CHECK(format_size(100ull << 20) == "100 MiB");
}
