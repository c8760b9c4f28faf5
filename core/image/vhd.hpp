// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>

#include "core/image/layer_file.hpp"

namespace guestfrag {

/// Opens one vhd file as a layer. Throws Error (NotFound, Corrupt, Unsupported, Io).
[[nodiscard]] std::unique_ptr<LayerFile> open_vhd(const std::string& path);

}  // namespace guestfrag
