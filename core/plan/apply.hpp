// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "core/model/volume_map.hpp"
#include "core/plan/plan.hpp"

namespace guestfrag {

/// The volume as it would be after `plan` ran: streams' extents rewritten move by move,
/// free space updated. Pure; the image is never touched. Validates as it goes and throws
/// Error(Corrupt, "move N: ...") naming the first move whose source is not owned by its
/// stream at that moment or whose destination is not free (or is unmovable/out of range).
[[nodiscard]] VolumeMap apply_plan(const VolumeMap& before, const Plan& plan);

/// The identity a plan for `volume` on the image at `image_path` of `virtual_size` carries.
[[nodiscard]] PlanIdentity identify(const VolumeMap& volume, const std::string& image_path, std::uint64_t virtual_size);

}  // namespace guestfrag
