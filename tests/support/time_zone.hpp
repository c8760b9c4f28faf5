// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <time.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace guestfrag::test {

/// Sets TZ for this process (and so for the guestfrag it runs) for the lifetime of the
/// object, and restores what was there before.
class TimeZone {
public:
    explicit TimeZone(const char* zone) {
        had_ = std::getenv("TZ") != nullptr;
        if (had_) saved_ = std::getenv("TZ");
        ::setenv("TZ", zone, 1);
        ::tzset();
    }
    ~TimeZone() {
        if (had_) {
            ::setenv("TZ", saved_.c_str(), 1);
        } else {
            ::unsetenv("TZ");
        }
        ::tzset();
    }
    TimeZone(const TimeZone&) = delete;
    TimeZone& operator=(const TimeZone&) = delete;

    /// Whether the tz database has `zone` (the tzdata package); tests of real zones skip
    /// without it rather than run in UTC.
    static bool installed(const std::string& zone) {
        const char* dir = std::getenv("TZDIR");
        return std::filesystem::exists(std::filesystem::path(dir ? dir : "/usr/share/zoneinfo") / zone);
    }

private:
    std::string saved_;
    bool had_ = false;
};

}  // namespace guestfrag::test
