// SPDX-License-Identifier: GPL-2.0-or-later
// Must NOT compile: the plan layer does not link guestfrag_apply, the layer that carries plans
// out (tests/layering/CMakeLists.txt).
#include "core/apply/mover.hpp"
