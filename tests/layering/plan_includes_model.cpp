// SPDX-License-Identifier: GPL-2.0-or-later
// Compiles: guestfrag_plan links guestfrag_model, so its sources see core/model.
#include "core/model/volume_map.hpp"

int plan_includes_model_probe() { return sizeof(guestfrag::VolumeMap) > 0 ? 0 : 1; }
