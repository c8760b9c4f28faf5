// SPDX-License-Identifier: GPL-2.0-or-later
// The vscsiStats histograms of docs/design.md §4: exact bucket limits and "≤ limit" semantics.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/estimate/histogram.hpp"
#include "core/estimate/io.hpp"

using guestfrag::Error;
using guestfrag::Histogram;
using guestfrag::Io;

TEST_CASE("vscsiStats limits are exactly docs/design.md §4's", "[estimate][histogram]") {
    const std::vector<std::int64_t> io_length(guestfrag::io_length_limits().begin(),
                                              guestfrag::io_length_limits().end());
    CHECK(io_length == std::vector<std::int64_t>{512, 1024, 2048, 4095, 4096, 8191, 8192, 16383, 16384, 32768,
                                                 49152, 65535, 65536, 81920, 131072, 262144, 524288});
    const std::vector<std::int64_t> seek(guestfrag::seek_distance_limits().begin(),
                                         guestfrag::seek_distance_limits().end());
    CHECK(seek == std::vector<std::int64_t>{-500000, -100000, -50000, -10000, -5000,  -1000, -500, -128, -64,
                                            -32,     -16,     -8,     -6,     -4,     -2,    -1,   0,    1,
                                            2,       4,       6,      8,      16,     32,    64,   128,  500,
                                            1000,    5000,    10000,  50000,  100000, 500000});
    CHECK(guestfrag::io_length_histogram().counts().size() == 18);
    CHECK(guestfrag::seek_distance_histogram().counts().size() == 34);
}

TEST_CASE("a value falls in the first bucket whose limit is at least the value", "[estimate][histogram]") {
    Histogram h = guestfrag::io_length_histogram();
    // limits index:  0:512 1:1024 2:2048 3:4095 4:4096 5:8191 6:8192 ... 16:524288, 17: > 524288
    CHECK(h.bucket_of(1) == 0);
    CHECK(h.bucket_of(512) == 0);
    CHECK(h.bucket_of(513) == 1);
    CHECK(h.bucket_of(4095) == 3);
    CHECK(h.bucket_of(4096) == 4);  // aligned 4 KiB has its own bucket
    CHECK(h.bucket_of(4097) == 5);
    CHECK(h.bucket_of(524288) == 16);
    CHECK(h.bucket_of(524289) == 17);
    CHECK(h.bucket_of(1 << 20) == 17);

    Histogram s = guestfrag::seek_distance_histogram();
    // index 0: ≤ −500000, 15: ≤ −1 (i.e. −1 only), 16: 0, 17: 1, 18: 2, 19: 3..4, 32: ≤ 500000, 33: > 500000
    CHECK(s.bucket_of(-1000000) == 0);
    CHECK(s.bucket_of(-500000) == 0);
    CHECK(s.bucket_of(-499999) == 1);
    CHECK(s.bucket_of(-1) == 15);
    CHECK(s.bucket_of(0) == 16);
    CHECK(s.bucket_of(1) == 17);
    CHECK(s.bucket_of(2) == 18);
    CHECK(s.bucket_of(3) == 19);
    CHECK(s.bucket_of(500000) == 32);
    CHECK(s.bucket_of(500001) == 33);
}

TEST_CASE("histograms add, merge and total", "[estimate][histogram]") {
    Histogram a({10, 20});
    a.add(5);
    a.add(10);
    a.add(11, 3);
    a.add(21);
    CHECK(a.counts() == std::vector<std::uint64_t>{2, 3, 1});
    Histogram b({10, 20});
    b.add(-7);
    b.add(100, 2);
    a.merge(b);
    CHECK(a.counts() == std::vector<std::uint64_t>{3, 3, 3});
    CHECK(a.total() == 9);
    a.clear();
    CHECK(a.total() == 0);
    CHECK_THROWS_AS(a.merge(Histogram({10, 30})), Error);
    CHECK_THROWS_AS(Histogram({}), Error);
    CHECK_THROWS_AS(Histogram({5, 5}), Error);
}

TEST_CASE("seek distance is +1 for perfectly sequential IOs", "[estimate][histogram]") {
    const Io first{1000, 4096};  // sectors 1000..1007
    CHECK(guestfrag::seek_distance(first, Io{1008, 512}) == 1);
    CHECK(guestfrag::seek_distance(first, Io{1007, 512}) == 0);
    CHECK(guestfrag::seek_distance(first, Io{1000, 512}) == -7);
    CHECK(guestfrag::seek_distance(first, Io{2000, 512}) == 993);
    CHECK(Io{0, 1000}.sectors() == 2);  // rounded up
}
