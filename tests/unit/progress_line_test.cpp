// SPDX-License-Identifier: GPL-2.0-or-later
// The CLI's progress line and the time left the GUI shows too, on hand-computed counts.
#include <catch2/catch.hpp>

#include "app/cli/progress_meter.hpp"
#include "pipeline/step_info.hpp"

using namespace guestfrag;

TEST_CASE("time left is the pace so far, after the step's first second", "[progress]") {
    // 2 s for 1 of 3 GiB: 4 s for the 2 left.
    CHECK(seconds_left(2.0, 1, 3) == Approx(4.0));
    CHECK_FALSE(seconds_left(0.5, 1, 3));  // too early to tell
    CHECK_FALSE(seconds_left(2.0, 0, 3));  // nothing done yet
    CHECK_FALSE(seconds_left(2.0, 3, 3));  // done
    CHECK(duration_text(0.2) == "1 s");
    CHECK(duration_text(-3) == "0 s");
    CHECK(duration_text(185) == "3 min 5 s");
    CHECK(duration_text(2 * 3600 + 10 * 60 + 59) == "2 h 10 min");
}

TEST_CASE("the progress line names the step, its count in its unit and the time left", "[progress][cli]") {
    const std::string copying = "step 2 of 6, " + std::string(step_info(ApplyStep::Copy).name);
    // 1 GiB of a 4 GiB disk in 2 s: 512 MiB/s, 6 s left.
    CHECK(cli::progress_line("applying", copying, StepUnit::DiskOffset, 1ull << 30, 4ull << 30, 2.0) ==
          "applying: step 2 of 6, copying the disk: at 1.00 GiB of the 4.00 GiB disk (512 MiB/s through it), "
          "about 6 s left");
    CHECK(cli::progress_line("applying", "step 3 of 6, moving clusters", StepUnit::Moves, 250, 1000, 0.5) ==
          "applying: step 3 of 6, moving clusters: 250 of 1000 moves");
    CHECK(cli::progress_line("compacting", "step 1 of 8, analysing the input", StepUnit::Records, 300, 400,
                             3.0) ==
          "compacting: step 1 of 8, analysing the input: 300 of 400 MFT records, about 1 s left");
    CHECK(cli::progress_line("planning", "", StepUnit::None, 1, 8, 1.5) ==
          "planning: 12.5 %, about 11 s left");
    CHECK(step_info(CompactStep::Convert).unit == StepUnit::None);
}
