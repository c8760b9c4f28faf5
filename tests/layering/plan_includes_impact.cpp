// SPDX-License-Identifier: GPL-2.0-or-later
// Must not compile: core/impact sits above core/plan, and a target linking only
// guestfrag_plan has no core/impact on its include path.
#include "core/impact/impact.hpp"

int plan_includes_impact_probe() { return 0; }
