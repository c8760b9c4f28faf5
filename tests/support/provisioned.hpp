// SPDX-License-Identifier: GPL-2.0-or-later
// Reading IoStats::provisioned in tests: one provisioning type's figures, and the order
// every workload must keep (docs/estimate.md §8.2: thin pays what lazy pays and more,
// lazy what eager pays and more).
#pragma once

#include <catch2/catch.hpp>

#include "core/estimate/io_stats.hpp"

namespace guestfrag::test {

/// The figures of `type` in `s` (fails the test when `s` has none).
inline const ProvisionedSeconds& provisioned(const IoStats& s, Provisioning type) {
    for (const ProvisionedSeconds& p : s.provisioned)
        if (p.type == type) return p;
    FAIL("no result for the type");
    return s.provisioned.front();
}

/// Checks thin ≥ lazy ≥ eager device time on every model.
inline void check_thin_lazy_eager(const IoStats& s) {
    const DeviceSeconds& e = provisioned(s, Provisioning::Eager).device_seconds;
    const DeviceSeconds& l = provisioned(s, Provisioning::Lazy).device_seconds;
    const DeviceSeconds& t = provisioned(s, Provisioning::Thin).device_seconds;
    for (const auto member : {&DeviceSeconds::hdd, &DeviceSeconds::ssd, &DeviceSeconds::array}) {
        CHECK(t.*member >= l.*member);
        CHECK(l.*member >= e.*member);
    }
}

}  // namespace guestfrag::test
